"""The snippets of ``docs/coming-from-okt.md`` run against the real control plane, and do what the page says.

Each snippet is a fenced ``python`` block marked by ``<!-- snippet: okt NAME -->`` on the line before it. It is
executed as a module of its own, given what the page has the reader generate or write beside it (``ConfigMapMyKind``
from ``okt gen resource``, a ``MyKindSpec``), and its reconciler reconciles a MyKind of the test namespace.
"""

from __future__ import annotations

import pathlib
import re
import types
from collections.abc import Callable
from typing import Any

import pydantic
import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import condition, crds

pytestmark = pytest.mark.integration

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "coming-from-okt.md"
_SNIPPET = re.compile(r"<!-- snippet: okt (?P<name>[\w-]+) -->\n```python\n(?P<code>.*?)\n```", re.S)


class MyKindSpec(pydantic.BaseModel):
    """The spec the page leaves to the reader."""


class ConfigMapMyKind(okt.MutableResource):
    """What ``okt gen resource --type ConfigMap --kind MyKind`` generates, for a manifest of one key."""

    api_version = "v1"
    kind = "ConfigMap"
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\n  namespace: {{ namespace }}\n"
    template += "data:\n  greeting: hello\n"


def snippet(name: str) -> types.ModuleType:
    codes = {found["name"]: found["code"] for found in _SNIPPET.finditer(PAGE.read_text())}
    assert name in codes, f"{PAGE.name} has no snippet {name!r}"
    module = types.ModuleType(f"coming_from_okt_{name}")
    module.__dict__.update(okt=okt, MyKindSpec=MyKindSpec, ConfigMapMyKind=ConfigMapMyKind)
    exec(compile(codes[name], f"<{PAGE.name}: {name}>", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def my_kind(apply_crd: Callable[[dict[str, Any]], kinds.Kind]) -> kinds.Kind:
    return apply_crd(crds.schemaless_crd("demo.example.com", "MyKind", "mykinds", "v1alpha1"))


def test_a_switch_translated_with_the_call_in_every_state_does_the_built_in_work_of_each(
    kube: kube_client.Client, namespace: str, my_kind: kinds.Kind
) -> None:
    # Called only where OKT's switch called r.Xxx(), the built-in work of CRChecker, ObjectsGetter and CRFinalizer
    # was skipped: no child, no finalizer, and Ready=True.
    reconciler = snippet("switch").MyKindReconciler()
    kube.create(
        {"apiVersion": my_kind.api_version, "kind": "MyKind", "metadata": {"name": "a", "namespace": namespace}}
    )

    run = okt.reconcile(reconciler, kube, None, namespace, "a")

    assert run.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End"
    assert kube.get(kinds.CONFIG_MAP, "a", namespace)["data"] == {"greeting": "hello"}
    stored = kube.get(my_kind, "a", namespace)
    assert stored["metadata"]["finalizers"] == ["demo.example.com/cleanup"]
    assert condition(stored, "Ready")["status"] == "True"

    kube.delete(my_kind, "a", namespace)
    run = okt.reconcile(reconciler, kube, None, namespace, "a")

    assert run.path_str == ">CRChecker>CRFinalizer>End"
    assert kube.get_or_none(my_kind, "a", namespace) is None
