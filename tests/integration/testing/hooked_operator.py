"""An operator file with a start-up and a clean-up hook, as okt.testing.RunningOperator's tests load it.

Each hook records that it ran as a ConfigMap in the namespace ``HOOKED_OPERATOR_NAMESPACE`` names: the clean-up hook
with the client the start-up hook was given (it is given none), as an operator deregisters on the way out.
"""

from __future__ import annotations

import os
from typing import Any

import okt
from okt.kube import kinds

_clients: list[okt.Client] = []


class Secrets(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"


def _record(client: okt.Client, name: str) -> None:
    namespace = os.environ["HOOKED_OPERATOR_NAMESPACE"]
    note: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
    client.create(note, kinds.CONFIG_MAP)


@okt.on_startup
def started_up(client: okt.Client) -> None:
    _clients.append(client)
    _record(client, "started-up")


@okt.on_cleanup
def cleaned_up() -> None:
    _record(_clients.pop(), "cleaned-up")
