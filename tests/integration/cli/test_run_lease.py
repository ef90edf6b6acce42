"""``okt run --lease-name``: the Lease an operator competes for, so that releases of one operator serving different
objects from one namespace lead apart."""

from __future__ import annotations

import pathlib

import pytest

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, envtest, waiting

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"


def test_releases_given_their_own_lease_names_both_lead(
    control_plane: envtest.ControlPlane, kube: kube_client.Client, namespace: str, tmp_path: pathlib.Path
) -> None:
    operator = tmp_path / "lease_operator.py"
    operator.write_text(OPERATOR)

    def release(name: str) -> OperatorProcess:
        return OperatorProcess.okt_run(
            operator,
            kubeconfig=control_plane.kubeconfig,
            namespaces=[namespace],
            args=[
                *("--selector", f"release={name}", "--leader-elect"),
                *("--lease-namespace", namespace, "--lease-name", f"maps-{name}"),
            ],
            log_path=tmp_path / f"{name}.log",
        )

    with release("one") as one, release("two") as two:
        assert one.ready() and two.ready()

        def holders() -> dict[str, str]:
            leases, _ = kube.list(kinds.LEASE, namespace)
            return {lease["metadata"]["name"]: lease["spec"].get("holderIdentity") or "" for lease in leases}

        # Without their own names both competed for okt-maps: one stood by for ever and its objects waited.
        waiting.wait_for(
            lambda: all(holders().get(f"maps-{name}") for name in ("one", "two")),
            timeout=30,
            message="each release to hold its own Lease",
        )
        assert "okt-maps" not in holders()
