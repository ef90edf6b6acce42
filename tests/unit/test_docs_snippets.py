"""Every code block of ``docs/getting-started.md`` runs, in page order, so the page cannot rot.

Each fenced block is marked by an HTML comment on the line just before it, which says what the block is:

=====================================  ====================================================================
``<!-- snippet: file PATH -->``        written to PATH in the reader's project (a later block for the same
                                       PATH replaces it, as the reader would)
``<!-- snippet: shell -->``            commands run offline: ``mkdir``, ``cd`` and ``okt gen ...`` (through
                                       click's CliRunner, as ``okt`` runs them)
``<!-- snippet: python -->``           executed with the project on ``sys.path``
``<!-- snippet: output -->``           exactly what the block before it printed
``<!-- snippet: cluster -->``          needs a cluster: run by ``tests/integration/test_docs_getting_started.py``
``<!-- snippet: tree -->``             the project's files once the page is done
=====================================  ====================================================================

A block without a mark fails the suite. The walk runs each command and snippet as a fresh process would: the
project's modules are forgotten between steps, and ``sys.path``/``sys.modules`` are restored afterwards (the sample
operator's package has the same name as the reader's).

The integration test loads this module by path for :func:`parse` and :func:`walk`, the page's one parser.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import pathlib
import re
import shlex
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import okt
from okt.codegen import cli as codegen_cli
from okt.reconciler import loader

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"
PROJECT = "memcached-operator"
"""The folder the page starts with (``mkdir memcached-operator && cd memcached-operator``)."""

KINDS = frozenset({"file", "shell", "python", "output", "cluster", "tree"})
PRINTING = frozenset({"shell", "python"})

CLUSTER_COMMANDS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        r"okt envtest start",
        r"okt envtest stop",
        r"export KUBECONFIG=\$\(okt envtest kubeconfig\)",
        r"kubectl apply -f \S+\.yaml",
        r"okt run \S+\.py --namespace default",
        r"kubectl wait --for=condition=\w+(=false)? \w+/[\w-]+ --timeout=\d+s",
        r"kubectl wait --for=jsonpath='\{(\.\w+)+\}'=\S+ \w+/[\w-]+ --timeout=\d+s",
        r"kubectl get( \w+/[\w-]+)+",
        r"kubectl patch \w+ [\w-]+ --type merge -p '\{.*\}'",
        r"kubectl describe \w+ [\w-]+",
        r"python -m pytest \S+/",
    )
)
"""The cluster commands the integration test knows how to run; anything else on the page is a failure."""

_MARK = re.compile(r"^<!-- snippet: (?P<kind>[a-z]+)(?: (?P<arg>\S+))? -->$")
_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of the page, with its mark (``kind`` is ``None`` for an unmarked block)."""

    kind: str | None
    arg: str | None
    lang: str
    text: str
    line: int

    @property
    def where(self) -> str:
        return f"{PAGE.name}:{self.line}"


def parse(text: str) -> list[Block]:
    """The fenced blocks of a page, in order, each with the mark on the line before its opening fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        previous = lines[index - 1].strip() if index else ""
        mark = _MARK.match(previous)
        body: list[str] = []
        start = index + 1
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index][len(fence["indent"]) :])
            index += 1
        blocks.append(
            Block(
                kind=mark["kind"] if mark else None,
                arg=mark["arg"] if mark else None,
                lang=fence["lang"],
                text="\n".join(body) + "\n",
                line=start,
            )
        )
        index += 1
    return blocks


def commands(script: str) -> list[list[str]]:
    """A shell block as commands: ``\\`` continuations joined, comments and blanks dropped, ``&&`` split."""
    joined = script.replace("\\\n", " ")
    found: list[list[str]] = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                if command:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def command_lines(script: str) -> list[str]:
    """A shell block's commands as single lines (continuations joined, ``&&`` split), as written."""
    joined = script.replace("\\\n", " ")
    return [
        " ".join(part.split())
        for line in joined.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
        for part in line.split("&&")
    ]


BLOCKS = parse(PAGE.read_text(encoding="utf-8"))


def _outputs() -> list[tuple[Block, Block]]:
    """Each output block with the block before it (whose printing it shows)."""
    return [(before, block) for before, block in itertools.pairwise(BLOCKS) if block.kind == "output"]


# -- the walk -----------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Walk:
    """The project the page built offline, and what its printing blocks printed (by the block's line)."""

    root: pathlib.Path
    project: pathlib.Path
    printed: dict[int, str] = dataclasses.field(default_factory=dict)

    def load(self, relative: str) -> Any:
        """Load the page's operator file with okt's loader (as ``okt run`` does)."""
        forget_modules_under(self.project)
        return loader.load_reconcilers(str(self.project / relative))


def forget_modules_under(folder: pathlib.Path) -> None:
    """Drop from ``sys.modules`` every module loaded from ``folder``: the next import reads the files again."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and pathlib.Path(file).resolve().is_relative_to(folder.resolve()):
            del sys.modules[name]


@contextlib.contextmanager
def isolated_imports(names: tuple[str, ...]) -> Iterator[None]:
    """Set ``names`` (and their submodules) aside in ``sys.modules`` and restore them and ``sys.path`` afterwards."""
    saved_path = list(sys.path)
    saved = {
        name: module
        for name, module in sys.modules.items()
        if any(name == top or name.startswith(f"{top}.") for top in names)
    }
    for name in saved:
        del sys.modules[name]
    try:
        yield
    finally:
        for name in [n for n in sys.modules if any(n == t or n.startswith(f"{t}.") for t in names)]:
            del sys.modules[name]
        sys.modules.update(saved)
        sys.path[:] = saved_path


def run_shell(block: Block, walk: Walk, cwd: list[pathlib.Path]) -> str:
    """Run an offline shell block; ``cwd`` is the reader's current directory (a one-item list, updated by ``cd``)."""
    printed: list[str] = []
    for words in commands(block.text):
        here = cwd[0]
        if words[0] == "mkdir":
            for name in (w for w in words[1:] if not w.startswith("-")):
                (here / name).mkdir(parents="-p" in words)
        elif words[0] == "cd":
            cwd[0] = (here / words[1]).resolve()
            if cwd[0] != here and cwd[0].name == PROJECT:
                walk.project = cwd[0]
        elif words[:2] == ["okt", "gen"]:
            forget_modules_under(here)
            with contextlib.chdir(here):
                result = CliRunner().invoke(codegen_cli.gen, words[2:], catch_exceptions=False)
            assert result.exit_code == 0, f"{block.where}: {shlex.join(words)} failed:\n{result.output}"
            printed.append(result.output)
        else:
            raise AssertionError(f"{block.where}: {words[0]!r} is not a command the offline walk runs")
    return "".join(printed)


def run_python(block: Block, walk: Walk) -> str:
    """Execute a python block with the project on ``sys.path``, as ``python`` started in the project would."""
    forget_modules_under(walk.project)
    if str(walk.project) not in sys.path:
        sys.path.insert(0, str(walk.project))
    out = io.StringIO()
    with contextlib.chdir(walk.project), contextlib.redirect_stdout(out):
        exec(compile(block.text, block.where, "exec"), {"__name__": "__snippet__"})
    return out.getvalue()


def walk(root: pathlib.Path, blocks: list[Block]) -> Walk:
    """Build the reader's project under ``root`` from the page's offline blocks, in page order.

    Must run inside :func:`isolated_imports`. Cluster blocks are skipped (they are the integration test's).
    """
    result = Walk(root=root, project=root)
    cwd = [root]
    for block in blocks:
        if block.kind == "file":
            assert block.arg, f"{block.where}: a file block names its path"
            path = result.project / block.arg
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text, encoding="utf-8")
        elif block.kind == "shell":
            result.printed[block.line] = run_shell(block, result, cwd)
        elif block.kind == "python":
            result.printed[block.line] = run_python(block, result)
    forget_modules_under(result.project)
    return result


def tree(folder: pathlib.Path) -> str:
    """``folder`` drawn as the page draws it (like ``tree``): entries sorted by name, folders ending in ``/``."""
    lines = [f"{folder.name}/"]

    def draw(directory: pathlib.Path, prefix: str) -> None:
        entries = sorted(
            (p for p in directory.iterdir() if p.name != "__pycache__"),
            key=lambda p: p.name,
        )
        for number, entry in enumerate(entries):
            last = number == len(entries) - 1
            lines.append(f"{prefix}{'└── ' if last else '├── '}{entry.name}{'/' if entry.is_dir() else ''}")
            if entry.is_dir():
                draw(entry, prefix + ("    " if last else "│   "))

    draw(folder, "")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Walk]:
    with isolated_imports(("memcached_operator", "okt_operator_main")):
        yield walk(tmp_path_factory.mktemp("reader"), BLOCKS)


# -- the page's shape -------------------------------------------------------------------------------------------------


def test_every_code_block_of_the_page_is_marked_with_a_known_snippet_kind() -> None:
    unmarked = [block.where for block in BLOCKS if block.kind not in KINDS]

    assert BLOCKS, "the page has no code block"
    assert unmarked == []


def test_every_output_block_follows_a_block_that_prints() -> None:
    orphans = [block.where for before, block in _outputs() if before.kind not in PRINTING]

    assert orphans == []


@pytest.mark.parametrize(
    "line", [line for block in BLOCKS if block.kind == "cluster" for line in command_lines(block.text)]
)
def test_cluster_commands_are_ones_the_integration_test_runs(line: str) -> None:
    assert any(pattern.fullmatch(line) for pattern in CLUSTER_COMMANDS), line


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "file" and b.lang == "python"], ids=lambda b: b.arg)
def test_python_files_of_the_page_compile(block: Block) -> None:
    code = compile(block.text, block.where, "exec")

    assert code.co_filename == block.where


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "file" and b.lang == "yaml"], ids=lambda b: b.arg)
def test_yaml_files_of_the_page_are_kubernetes_objects(block: Block) -> None:
    documents = list(yaml.safe_load_all(block.text))

    assert documents
    assert all({"apiVersion", "kind", "metadata"} <= set(doc) for doc in documents)


# -- the walk ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("before", "output"), _outputs(), ids=[o.where for _, o in _outputs()])
def test_each_printing_block_prints_what_the_page_shows(built: Walk, before: Block, output: Block) -> None:
    assert built.printed[before.line] == output.text


def test_the_project_has_exactly_the_files_the_page_shows(built: Walk) -> None:
    shown = next(block for block in BLOCKS if block.kind == "tree")

    assert tree(built.project) == shown.text


def test_the_generated_crd_carries_the_models_schema(built: Walk) -> None:
    crd = yaml.safe_load((built.project / "deploy" / "crd.yaml").read_text())
    version = crd["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]

    assert crd["metadata"]["name"] == "memcacheds.cache.example.com"
    assert version["subresources"] == {"status": {}}
    assert spec["required"] == ["size"]
    assert (spec["properties"]["size"]["minimum"], spec["properties"]["size"]["maximum"]) == (1, 100)
    assert spec["properties"]["image"]["default"] == "memcached:1.6"


def test_the_generated_rbac_covers_the_children_the_reconciler_owns(built: Walk) -> None:
    documents = list(yaml.safe_load_all((built.project / "deploy" / "rbac.yaml").read_text()))
    role = next(doc for doc in documents if doc["kind"] == "Role")
    granted = {resource for rule in role["rules"] for resource in rule["resources"]}

    assert [doc["kind"] for doc in documents] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",  # <account>-metrics-auth: the reviews of /metrics' tokens are cluster-scoped
        "ClusterRoleBinding",
    ]
    assert granted == {
        "configmaps",
        "services",
        "deployments",
        "events",
        "memcacheds",
        "memcacheds/status",
        "memcacheds/finalizers",  # okt marks its children blockOwnerDeletion
    }


def test_the_operator_file_loads_the_final_reconciler(built: Walk) -> None:
    (reconciler,) = built.load("main.py")

    assert (reconciler.api_version, reconciler.kind) == ("cache.example.com/v1alpha1", "Memcached")
    assert [owned.kind for owned in reconciler.owns] == ["ConfigMap", "Service", "Deployment"]


@pytest.mark.parametrize(
    ("image", "refused"),
    [
        ("memcached:1.6", False),
        ("registry.example.com:5000/memcached:1.6.21", False),
        ("memcached", True),
        ("registry.example.com:5000/memcached", True),
    ],
)
def test_the_reconcilers_check_refuses_only_images_without_a_tag(built: Walk, image: str, refused: bool) -> None:
    (reconciler_cls,) = built.load("main.py")
    spec = reconciler_cls.spec_model.model_validate({"size": 1, "image": image})
    cr = okt.CustomResource(
        {
            "apiVersion": reconciler_cls.api_version,
            "kind": "Memcached",
            "metadata": {"name": "cache", "namespace": "default"},
        },
        spec=spec,
    )

    ctx = types.SimpleNamespace(spec=cr.spec)  # all that check() reads of a reconcile's context

    if refused:
        with pytest.raises(okt.InvalidSpec, match="has no tag"):
            reconciler_cls().check(ctx)
    else:
        assert reconciler_cls().check(ctx) is None
