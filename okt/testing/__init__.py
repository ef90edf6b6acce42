"""okt.testing — test your operator: on a real local control plane, or against an in-memory client.

* :class:`ControlPlane` (and the pytest plugin's fixtures): etcd, kube-apiserver and kube-controller-manager on
  loopback (:mod:`okt.testing.envtest`);
* :class:`RunningOperator`: your reconcilers under okt's manager in the test's process, until synced
  (:mod:`okt.testing.running`); :class:`OperatorProcess`: ``okt run`` as a child process, ready on ``/readyz``,
  stopped with SIGTERM (:mod:`okt.testing.process`);
* :class:`FakeClient`: an in-memory client for unit tests of a reconcile without a cluster (:mod:`okt.testing.fake`);
* :func:`condition`, :func:`wait_for`: read a condition, wait instead of sleeping;
* :class:`AuditLog`: who sent which request, from the API server's audit log (:mod:`okt.testing.audit`).

The names of the last four modules load on first use: ``okt envtest`` (the command line) imports this package, and
``okt run`` should not carry test tooling it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from okt.testing.envtest import ControlPlane, ControlPlaneError, TokenUser, control_plane
from okt.testing.waiting import WaitTimeout, wait_for

if TYPE_CHECKING:
    from okt.testing.audit import AuditLog
    from okt.testing.conditions import condition
    from okt.testing.fake import FakeClient
    from okt.testing.process import OperatorProcess
    from okt.testing.running import RunningOperator

_ON_FIRST_USE = {
    "AuditLog": "okt.testing.audit",
    "FakeClient": "okt.testing.fake",
    "OperatorProcess": "okt.testing.process",
    "RunningOperator": "okt.testing.running",
    "condition": "okt.testing.conditions",
}

__all__ = [
    "AuditLog",
    "ControlPlane",
    "ControlPlaneError",
    "FakeClient",
    "OperatorProcess",
    "RunningOperator",
    "TokenUser",
    "WaitTimeout",
    "condition",
    "control_plane",
    "wait_for",
]


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'okt.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
