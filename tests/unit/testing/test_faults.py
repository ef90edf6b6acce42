"""okt.testing.FaultProxy without a control plane: what it is asked to inject and the kubeconfig it writes."""

from __future__ import annotations

import os
import pathlib
import socket
import stat
import threading

import pytest
import yaml

from okt.testing import faults


def test_the_kubeconfig_pointing_at_the_proxy_is_readable_by_its_owner_only(tmp_path: pathlib.Path) -> None:
    source = tmp_path / "kubeconfig"
    source.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "admin", "user": {"token": "secret-token"}}],
            }
        )
    )
    previous = os.umask(0o022)
    try:
        with faults.FaultProxy("https://127.0.0.1:6443", rate=0) as proxy:
            written = proxy.kubeconfig(source, tmp_path / "through-the-proxy")
    finally:
        os.umask(previous)

    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    config = yaml.safe_load(written.read_text())
    assert config["clusters"][0]["cluster"] == {"server": proxy.url}
    assert config["users"][0]["user"]["token"] == "secret-token"


@pytest.mark.parametrize("kinds", [("500", "50O"), ("watch_drop",)])
def test_fault_kinds_the_proxy_would_never_inject_are_refused_when_it_is_made(kinds: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="fault kind"):
        faults.FaultProxy("https://127.0.0.1:6443", rate=1.0, kinds=kinds)


def test_stopping_a_proxy_that_was_never_started_returns_and_frees_its_port() -> None:
    proxy = faults.FaultProxy("https://127.0.0.1:6443", rate=0)
    port = int(proxy.url.rsplit(":", 1)[1])

    stopping = threading.Thread(target=proxy.stop, daemon=True)
    stopping.start()
    stopping.join(10)

    assert not stopping.is_alive(), "stop() of a proxy never started did not return"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
