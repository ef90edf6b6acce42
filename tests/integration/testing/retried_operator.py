"""An operator file whose start-up hook waits for a backend, as okt.testing.RunningOperator's tests load it.

Its hook raises ``okt.TemporaryError`` at its first two calls (the backend is not up yet), then records that it ran as
a ConfigMap in the namespace ``RETRIED_OPERATOR_NAMESPACE`` names. At each call it asks the operator's ``/readyz`` (on
``RETRIED_OPERATOR_PROBES``), as a kubelet would, and keeps the answers in :data:`readiness`.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from typing import Any

import okt
from okt.kube import kinds

readiness: list[tuple[int, str]] = []
"""What ``/readyz`` answered at each call of the start-up hook."""


class Secrets(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"


def _ready() -> tuple[int, str]:
    try:
        with urllib.request.urlopen(os.environ["RETRIED_OPERATOR_PROBES"] + "/readyz", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@okt.on_startup
def backend_up(client: okt.Client) -> None:
    readiness.append(_ready())
    if len(readiness) <= 2:
        raise okt.TemporaryError("the backend is not up yet", delay=0.2)
    namespace = os.environ["RETRIED_OPERATOR_NAMESPACE"]
    note: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "started-up", "namespace": namespace},
    }
    client.create(note, kinds.CONFIG_MAP)
