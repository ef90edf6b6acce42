"""One plural rule: ``okt gen crd`` and the runtime agree, and both follow the API machinery's."""

from __future__ import annotations

import pytest

import okt
from okt.codegen import crd
from okt.kube import kinds


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Memcached", "memcacheds"),
        ("Ingress", "ingresses"),
        ("Policy", "policies"),
        ("Proxy", "proxies"),
        ("Gateway", "gateways"),
        ("Box", "boxes"),
        ("Match", "matches"),
        ("Quiz", "quizes"),
    ],
)
def test_codegen_and_the_runtime_use_the_same_plural(kind: str, plural: str) -> None:
    reconciler = type("R", (okt.Reconciler,), {"api_version": "example.com/v1", "kind": kind})

    assert kinds.plural_of(kind) == plural
    assert crd.primary_of(reconciler).plural == plural
    assert reconciler.primary_kind().plural == plural
