# okt — the two commands are `make demo` and `make test`; everything else is a building block.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.okt-installed
PYTEST  := $(BIN)/pytest

.PHONY: all venv envtest lint types imports unit integration e2e test demo docs bench bench-full bench-scale chaos clean

all: test

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,docs,bench]'
	touch $(STAMP)

venv: $(STAMP)

## the local control plane (built once per machine from Debian's kubernetes source package, then cached)
envtest: venv
	$(BIN)/okt envtest build

lint: venv
	$(BIN)/ruff check okt codegen tests samples benchmarks docs/hooks
	$(BIN)/ruff format --check okt codegen tests samples benchmarks docs/hooks

types: venv
	$(BIN)/mypy

imports: venv
	$(BIN)/lint-imports

unit: venv
	$(PYTEST) tests/unit -q

integration: envtest
	$(PYTEST) tests/integration -q

e2e: envtest
	$(PYTEST) tests/e2e samples -q

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

test: lint types imports unit integration e2e docs

demo: envtest
	$(BIN)/python -m samples.memcached.demo

bench: envtest
	$(BIN)/python -m benchmarks.run --n 200

bench-full: envtest
	$(BIN)/python -m benchmarks.run --n 1000

## okt's cost as N grows (realistic mix): make bench-scale SCALE_N="1000 3000"
SCALE_N ?= 1000 3000 10000
bench-scale: envtest
	$(BIN)/python -m benchmarks.scale --n $(SCALE_N)

chaos: envtest
	$(BIN)/python -m tests.reliability

clean:
	rm -rf site .pytest_cache .mypy_cache .ruff_cache
