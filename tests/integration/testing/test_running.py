"""okt.testing.RunningOperator against a real kube-apiserver: a start that cannot finish says why; an operator given
as its module or its file runs with its start-up and clean-up hooks, as okt run runs it."""

from __future__ import annotations

import pathlib
import threading
import types

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import RunningOperator, WaitTimeout, envtest, waiting
from tests.integration import service_accounts
from tests.integration.testing import hooked_operator, retried_operator

pytestmark = pytest.mark.integration

ACCOUNT = "unprivileged-operator"


class Secrets(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"


def test_a_start_timing_out_on_a_kind_the_api_server_refuses_names_the_kind_and_the_rule_to_grant(
    kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str
) -> None:
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": namespace}}
    kube.create(account, kinds.Kind("v1", "ServiceAccount", "serviceaccounts"))
    # The account holds no role: its list and watch of Secrets are refused (403), and the cache never syncs.
    operator = kube_client.Client.from_kubeconfig(
        service_accounts.kubeconfig_of(kube, control_plane, namespace, ACCOUNT)
    )
    try:
        with pytest.raises(WaitTimeout) as raised:
            RunningOperator.start(operator, Secrets, namespaces=[namespace], timeout=5, tune_memory=False)
    finally:
        operator.close()

    said = str(raised.value)
    assert "Secret" in said, said
    assert "grant list and watch on secrets" in said, said


HOOKED_FILE = pathlib.Path(hooked_operator.__file__)


@pytest.mark.parametrize(
    "operator", [hooked_operator, HOOKED_FILE, str(HOOKED_FILE)], ids=["module", "path", "file name"]
)
def test_an_operator_given_as_its_module_or_file_runs_its_start_up_and_clean_up_hooks(
    kube: kube_client.Client,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    operator: types.ModuleType | pathlib.Path | str,
) -> None:
    monkeypatch.setenv("HOOKED_OPERATOR_NAMESPACE", namespace)

    def recorded() -> list[str]:
        return sorted(note["metadata"]["name"] for note in kube.list(kinds.CONFIG_MAP, namespace)[0])

    with RunningOperator.start(kube, operator, namespaces=[namespace], tune_memory=False) as running:
        assert [cls.__name__ for cls in running.manager.reconcilers] == ["Secrets"]
        assert "started-up" in recorded()
        assert "cleaned-up" not in recorded()
    assert {"started-up", "cleaned-up"} <= set(recorded())


def test_a_start_up_hook_raising_a_temporary_error_is_retried_the_operator_not_ready_until_it_returns(
    kube: kube_client.Client, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kopf's start-up handlers retried: the backend comes up at the third call, and the operator starts then."""
    port = envtest.free_port()
    monkeypatch.setenv("RETRIED_OPERATOR_NAMESPACE", namespace)
    monkeypatch.setenv("RETRIED_OPERATOR_PROBES", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(retried_operator, "readiness", [])

    with RunningOperator.start(
        kube, retried_operator, namespaces=[namespace], metrics_bind=f"127.0.0.1:{port}", tune_memory=False
    ) as running:
        assert running.manager.working
        waiting.wait_for(lambda: running.manager.readiness() == (True, "ok"), timeout=15)
        assert kube.get(kinds.CONFIG_MAP, "started-up", namespace)["metadata"]["name"] == "started-up"

    retrying = "not ready: the start-up hook backend_up failed (TemporaryError), retried in 0.2 s"
    assert retried_operator.readiness == [(503, "not ready: caches not synced"), (503, retrying), (503, retrying)]


def test_a_clean_up_hook_that_raises_fails_the_test_at_the_end_of_the_block_as_okt_run_exits_1(
    kube: kube_client.Client, namespace: str
) -> None:
    """The shutdown ended in time, so the block ended quietly: the test passed where ``okt run`` exits 1."""

    def deregister() -> None:
        raise RuntimeError("the registry refused")

    with (
        pytest.raises(AssertionError, match=r"did not stop cleanly: the clean-up hook .*deregister failed") as raised,
        RunningOperator.start(kube, Secrets, namespaces=[namespace], on_cleanup=[deregister], tune_memory=False),
    ):
        pass
    assert "the registry refused" in str(raised.value)


def test_a_reconcile_still_running_after_the_grace_period_fails_the_test_at_the_end_of_the_block(
    kube: kube_client.Client, namespace: str
) -> None:
    """The shutdown leaves a reconcile it cannot interrupt running once the grace period is over, and reports itself
    finished: the block ended quietly, and the next test ran beside a reconcile of this one."""
    entered, released = threading.Event(), threading.Event()

    class Stuck(okt.Reconciler):
        api_version = "v1"
        kind = "Secret"

        def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
            entered.set()
            released.wait(30)
            return None

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "held", "namespace": namespace}}
    try:
        with (
            pytest.raises(AssertionError, match=r"still running after the 0\.5 s grace period") as raised,
            RunningOperator.start(kube, Stuck, namespaces=[namespace], grace_period=0.5, tune_memory=False),
        ):
            kube.create(secret, kinds.BUILTIN[("v1", "Secret")])
            assert entered.wait(15)
    finally:
        released.set()
    assert namespace in str(raised.value)


def test_a_failure_inside_the_block_is_the_one_reported_however_the_operator_stopped(
    kube: kube_client.Client, namespace: str
) -> None:
    def deregister() -> None:
        raise RuntimeError("the registry refused")

    with (
        pytest.raises(KeyError, match="the test's own"),
        RunningOperator.start(kube, Secrets, namespaces=[namespace], on_cleanup=[deregister], tune_memory=False),
    ):
        raise KeyError("the test's own")
