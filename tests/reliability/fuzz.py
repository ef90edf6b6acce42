"""The ``fuzz`` scenario: hypothesis-generated specs past a CRD whose spec accepts anything.

The sample's schema would keep most bad specs out, and so hide whether okt itself copes with them.
"""

from __future__ import annotations

import json
import pathlib
import random
import time
from collections.abc import Mapping
from typing import Any

import hypothesis
import pydantic
from hypothesis import strategies as st

import okt
from samples.memcached.memcached_operator import api, policy
from samples.memcached.tests import harness
from tests.reliability import checks, logs, outcome, profiles, testbed


def fuzz_crd() -> dict[str, Any]:
    """The sample's CRD, except that its spec accepts any JSON value (the schema no longer protects the operator)."""
    crd = harness.load_crd()
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"] = {
        "description": "Anything: the reliability suite bypasses the schema.",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    schema.pop("required", None)
    return crd


_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)

_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_IMAGES = st.sampled_from(
    [
        "memcached:1.6",
        "memcached",
        "memcached:latest",
        "registry.example.com/memcached:1.6.21",
        "memcached@sha256:" + "a" * 64,
        "",
        " memcached:1.6",
        "Memcached:1.6",
    ]
)
_NEAR_VALID = st.fixed_dictionaries(
    {"size": st.integers(min_value=1, max_value=50) | st.integers(min_value=-3, max_value=120)},
    optional={"image": _IMAGES},
)
_MEMCACHED_LIKE = st.builds(
    lambda base, extra: {**extra, **base},
    st.fixed_dictionaries(
        {},
        optional={
            "size": st.integers(min_value=-3, max_value=120) | _JSON,
            "image": _IMAGES | st.text(max_size=60) | _JSON,
        },
    ),
    st.dictionaries(st.text(max_size=10), _JSON, max_size=2) | st.just({}),
)
SPECS = st.one_of(_NEAR_VALID, _NEAR_VALID, _NEAR_VALID, _MEMCACHED_LIKE, _JSON)
"""Memcached-shaped specs, about half of them valid; the others with out-of-range sizes, floating images, wrong
types and unknown fields; now and then any JSON value at all (a string, a list, null)."""


EDGE_SPECS: tuple[Any, ...] = (
    {"size": 3, "image": "memcached:" + "1" * 20_000},
    {"size": 3, **{f"unknown-{i}": i for i in range(1500)}},
    {"size": json.loads("[" * 60 + "]" * 60)},
    {"size": "3"},
    {"size": 3.0, "image": "memcached:1.6"},
    {"size": 1e300},
    {"size": 3, "image": "memcached:1.6\n--privileged"},
)
"""Specs hypothesis rarely reaches: a huge image name, a thousand unknown fields (an error message far over the
condition's 32 KiB), deep nesting, numbers as strings or floats, a newline in the image."""


def fuzz_specs(count: int, seed: int) -> list[Any]:
    """Up to ``count`` distinct specs drawn by hypothesis from :data:`SPECS`, reproducibly for a seed."""
    found: list[Any] = []

    @hypothesis.settings(
        max_examples=2 * count,  # hypothesis repeats itself now and then
        database=None,
        deadline=None,
        phases=[hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.seed(seed)
    @hypothesis.given(SPECS)
    def collect(spec: Any) -> None:
        found.append(spec)

    collect()
    distinct: dict[str, Any] = {}
    for spec in found:
        distinct.setdefault(json.dumps(spec, sort_keys=True), spec)
    return list(distinct.values())[:count]


def expected_verdict(spec: Any) -> str | None:
    """What the operator should say about a stored spec: None (valid) or the reason it must refuse it with."""
    if not isinstance(spec, Mapping):
        return "InvalidSpec"
    try:
        policy.check(api.MemcachedSpec.model_validate(dict(spec)))
    except (pydantic.ValidationError, okt.InvalidSpec):
        return "InvalidSpec"
    return None


@outcome.scenario("fuzz", "fuzzed specs past a permissive schema")
def fuzzed_specs(workdir: pathlib.Path, sizes: profiles.Sizes, rng: random.Random) -> outcome.Found:
    """Hypothesis-generated specs past a permissive CRD, on a control plane of their own."""
    with testbed.Lab(workdir / "fuzz", crd=fuzz_crd(), audit_log=False, controllers=()) as lab:
        namespace = lab.namespace("fuzz")
        operator = lab.operator("fuzz", namespace)
        operator.wait_ready()
        probe_created = time.time()
        lab.create_all(namespace, {"probe": {"size": 1, "image": "memcached:latest"}})
        specs = fuzz_specs(sizes.fuzz_cases, rng.randrange(2**32))
        cases = {f"fuzz-{i:04d}": spec for i, spec in enumerate(specs)}
        cases.update((f"edge-{i:02d}", spec) for i, spec in enumerate(EDGE_SPECS))
        stored = lab.create_all(namespace, cases)
        verdicts = {name: expected_verdict(obj.get("spec")) for name, obj in stored.items()}
        verdicts["probe"] = "InvalidSpec"
        valid = [name for name, verdict in verdicts.items() if verdict is None]

        def expected(name: str) -> frozenset[tuple[str, str]]:
            return checks.memcached_children(name) if verdicts.get(name) is None else frozenset()

        started = time.monotonic()
        testbed.until(lambda: not checks.unsettled(lab.snapshot(namespace)), sizes.timeout(len(stored)))
        took = time.monotonic() - started
        time.sleep(max(probe_created + profiles.BACKOFF_WINDOW + 1.0 - time.time(), 0.0))
        snapshot = lab.snapshot(namespace)
        records = operator.records()
        counts = {"probe": logs.reconciles(records, "probe", probe_created, probe_created + profiles.BACKOFF_WINDOW)}
        alive = operator.alive
        operator.stop()
        crash = logs.crash_check([operator])
    found = [
        checks.Check("every CR settled", tuple(checks.unsettled(snapshot))),
        checks.with_status(snapshot),
        checks.verdicts_match(snapshot, verdicts),
        checks.children_exact(snapshot, expected, names=valid),
        logs.backoff_bounded(counts, profiles.BACKOFF_LIMIT, profiles.BACKOFF_WINDOW),
        checks.Check.holds("the operator survived", alive, f"exited with {operator.exit_status}"),
        crash,
    ]
    figures = {
        "cases": len(specs),
        "edge_cases": len(EDGE_SPECS),
        "refused_by_the_api": len(cases) - len(stored),
        "valid": len(valid),
        "ready_reasons": checks.ready_reasons(snapshot),
        "settle_seconds": round(took, 1),
        "probe_reconciles_in_window": counts["probe"],
        "backoff_window_seconds": profiles.BACKOFF_WINDOW,
        "crashes": len(crash.problems),
    }
    return found, figures
