"""``okt run`` against an API server whose certificate the kubeconfig's CA does not verify, or with a CA that cannot be
loaded, stops at once in one line."""

from __future__ import annotations

import base64
import pathlib
import subprocess
import sys

import pytest
import yaml

from okt.testing import envtest

pytestmark = pytest.mark.integration

OPERATOR = "import okt\nclass Maps(okt.Reconciler):\n    api_version = 'v1'\n    kind = 'ConfigMap'\n"
NOT_PEM = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKf\n-----END CERTIFICATE-----\n").decode()


@pytest.mark.parametrize(
    ("authority", "said"),
    [({}, "CERTIFICATE_VERIFY_FAILED")],
    ids=["another-ca"],
)
def test_a_certificate_that_does_not_verify_stops_okt_run_with_one_line_not_retried(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, authority: dict[str, str], said: str
) -> None:
    config = yaml.safe_load(pathlib.Path(control_plane.kubeconfig).read_text())
    for cluster in config["clusters"]:
        cluster["cluster"] = {"server": cluster["cluster"]["server"], **authority}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    operator = tmp_path / "tls_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(kubeconfig)]
    argv += ["--metrics-bind-address", "0", "--log-format", "json"]

    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    # Each failed try was retried with a warning, as if the server were restarting, and the line said nothing to do.
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: cannot reach the Kubernetes API server: GET /version -> no response (Unavailable): ")
    assert said in line
    assert line.endswith(
        ": TLS failed: check the certificate authority the kubeconfig (or the in-cluster ca.crt) gives for this server"
    )


@pytest.mark.parametrize("proxy", [None, "https"], ids=["direct", "https-proxy"])
@pytest.mark.parametrize(
    ("authority", "said"),
    [
        ("file", "the CA file {ca} cannot be used: it holds no usable CA certificate in PEM form"),
        ("data", "the kubeconfig's certificate-authority-data cannot be used: it holds no usable CA certificate"),
    ],
    ids=["ca-file", "ca-data"],
)
def test_a_ca_that_cannot_be_loaded_stops_okt_run_at_start_with_one_line_naming_it(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path, proxy: str | None, authority: str, said: str
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("not a certificate\n")
    config = yaml.safe_load(pathlib.Path(control_plane.kubeconfig).read_text())
    for cluster in config["clusters"]:
        body = {"server": cluster["cluster"]["server"]}
        if authority == "file":
            body["certificate-authority"] = str(ca)
        else:
            body["certificate-authority-data"] = NOT_PEM  # a PEM block that is no certificate
        if proxy:  # never reached: the CA is refused before any connection, to the proxy or the server
            body["proxy-url"] = "https://127.0.0.1:9"
        cluster["cluster"] = body
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    operator = tmp_path / "tls_operator.py"
    operator.write_text(OPERATOR)
    argv = [sys.executable, "-m", "okt.cli.main", "run", str(operator), "--kubeconfig", str(kubeconfig)]
    argv += ["--metrics-bind-address", "0", "--log-format", "json"]

    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    # Directly, the CA was read at the first connection: "no response (Unavailable)", as an unreachable server;
    # through the https proxy, a bare OSError out of the first request.
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: " + said.format(ca=ca)), line
