"""okt.testing.OperatorProcess running ``okt run`` on the real control plane: what its child is given to start with."""

from __future__ import annotations

import pathlib
import socket
import textwrap
from collections.abc import Iterator

import pytest
import yaml

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import OperatorProcess, envtest

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[3]

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"

BUILDS_ITS_OWN_CLIENT = textwrap.dedent(
    """
    import os

    import okt
    from okt.kube import client as kube_client
    from okt.kube import kinds


    class Maps(okt.Reconciler):
        api_version = "v1"
        kind = "ConfigMap"


    @okt.on_startup
    def note_with_a_client_of_its_own(client: okt.Client) -> None:
        # As operator code does that builds a client of its own (a library's, a script's): from the environment.
        own = kube_client.Client.from_kubeconfig()
        try:
            note = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own-client"}}
            own.create({**note, "metadata": {**note["metadata"], "namespace": os.environ["NOTE_NAMESPACE"]}})
        finally:
            own.close()
    """
)


@pytest.mark.parametrize("logged", [True, False], ids=["with-a-log-file", "without"])
def test_a_probe_port_taken_before_okt_run_binds_it_is_picked_again(
    control_plane: envtest.ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    capfd: pytest.CaptureFixture[str],
    logged: bool,
) -> None:
    """A port free when picked can be taken by another process before the child binds it: ``okt run`` then exits
    ("cannot serve metrics and probes on ...: Address already in use"), and the start failed the test. Without a log
    file, that line went to this process's stderr, where nothing read it: the start failed all the same."""
    operator = tmp_path / "maps.py"
    operator.write_text(OPERATOR)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        picked: list[int] = []

        def ports() -> Iterator[int]:
            yield taken_port  # taken between the pick and the bind
            while True:
                yield envtest.free_port()

        given = ports()

        def pick_port() -> int:
            picked.append(next(given))
            return picked[-1]

        running = OperatorProcess.okt_run(
            operator,
            kubeconfig=control_plane.kubeconfig,
            namespaces=[namespace],
            env={"PYTHONPATH": str(ROOT)},
            cwd=tmp_path,
            log_path=tmp_path / "operator.log" if logged else None,
            pick_port=pick_port,
        )
        with running as started:
            assert started.ready()
            assert started.probe_url == f"http://127.0.0.1:{picked[-1]}"
    assert picked[0] == taken_port and len(picked) == 2
    refusal = f"cannot serve metrics and probes on 127.0.0.1:{taken_port}"
    # Without a log file, what it says is passed on to this process's stderr, as before.
    assert refusal in (running.log_text() if logged else capfd.readouterr().err)
    assert running.returncode == 0


def test_operator_code_building_its_own_client_from_the_environment_talks_to_the_cluster_okt_run_is_given(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child inherited the test runner's ``$KUBECONFIG``: ``okt run --kubeconfig K`` ran against K, but a client
    the operator's code built from the environment reached the cluster the runner's ``$KUBECONFIG`` names (here one
    that does not answer; on a developer's machine, a real cluster)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "someone", "user": {"token": "not-this-one"}}],
                "contexts": [{"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "someone"}}],
                "current-context": "elsewhere",
            }
        )
    )
    monkeypatch.setenv("KUBECONFIG", str(elsewhere))  # the test runner's own cluster
    operator = tmp_path / "own_client.py"
    operator.write_text(BUILDS_ITS_OWN_CLIENT)
    running = OperatorProcess.okt_run(
        operator,
        kubeconfig=control_plane.kubeconfig,
        namespaces=[namespace],
        env={"PYTHONPATH": str(ROOT), "NOTE_NAMESPACE": namespace},
        cwd=tmp_path,
        log_path=tmp_path / "operator.log",
    )
    with running:
        assert kube.get_or_none(kinds.CONFIG_MAP, "own-client", namespace) is not None, running.tail()
    assert running.env["KUBECONFIG"] == str(control_plane.kubeconfig)
