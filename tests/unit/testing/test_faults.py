"""okt.testing.FaultProxy without a control plane: what it is asked to inject and the kubeconfig it writes."""

from __future__ import annotations

import os
import pathlib
import stat

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
