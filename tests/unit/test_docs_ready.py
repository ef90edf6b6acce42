"""``docs/guide/ready.md``: its example's ``ready(ctx)`` waits for the replicas, with the in-memory client.

The page's example (the block after ``<!-- example: ready.py -->``) is loaded as written; a WebApp is reconciled once
with its Deployment written but no replica available (``Ready=False``, ``ReplicasUnavailable``), then again once the
Deployment reports every replica available for its latest generation (``Ready=True``, ``Serving``).
"""

from __future__ import annotations

import pathlib
import re
import types

import okt
from okt.kube import kinds
from okt.testing import FakeClient, condition

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "ready.md"
WEBAPP = kinds.Kind("apps.example.com/v1alpha1", "WebApp", "webapps")
DEPLOYMENT = kinds.Kind("apps/v1", "Deployment", "deployments")


def _example() -> types.ModuleType:
    match = re.search(r"<!-- example: ready\.py -->\n```python\n(.*?)\n```", PAGE.read_text(), re.DOTALL)
    assert match, "the page lost its example block"
    module = types.ModuleType("ready_example")
    exec(compile(match.group(1), str(PAGE), "exec"), module.__dict__)
    return module


def test_ready_stays_false_until_every_replica_is_available_then_says_serving() -> None:
    example = _example()
    fake = FakeClient(kinds=[WEBAPP])
    fake.put(
        {
            "apiVersion": WEBAPP.api_version,
            "kind": "WebApp",
            "metadata": {"name": "web", "namespace": "shop", "generation": 1},
            "spec": {"replicas": 2, "image": "registry.example.com/web:1.0"},
        }
    )

    okt.reconcile(example.WebAppReconciler(), fake, None, "shop", "web")

    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ReplicasUnavailable",
        "0/2 replicas available",
    )

    deployment = fake.stored(DEPLOYMENT, "web", "shop")
    assert deployment is not None
    generation = deployment["metadata"].get("generation", 1)
    fake.put(
        {
            **deployment,
            "status": {
                "observedGeneration": generation,
                "replicas": 2,
                "readyReplicas": 2,
                "availableReplicas": 2,
                "updatedReplicas": 2,
            },
        }
    )

    okt.reconcile(example.WebAppReconciler(), fake, None, "shop", "web")

    ready = condition(fake.stored(WEBAPP, "web", "shop"), "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("True", "Serving")
