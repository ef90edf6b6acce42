"""A kubeconfig that turns TLS verification off is said once, with the cluster's name, and requests stay quiet."""

from __future__ import annotations

import gc
import pathlib
import warnings

import pytest
import yaml

from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest

pytestmark = pytest.mark.integration


def insecure_kubeconfig(plane: envtest.ControlPlane, target: pathlib.Path) -> pathlib.Path:
    config = yaml.safe_load(plane.kubeconfig.read_text())
    for entry in config["clusters"]:
        cluster = entry["cluster"]
        cluster.pop("certificate-authority", None)
        cluster.pop("certificate-authority-data", None)
        cluster["insecure-skip-tls-verify"] = True
    target.write_text(yaml.safe_dump(config))
    return target


def test_an_insecure_cluster_is_said_once_and_its_requests_are_quiet(
    control_plane: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    path = insecure_kubeconfig(control_plane, tmp_path / "insecure")
    gc.collect()  # what earlier tests left to the garbage collector says its unclosed sockets now, not in the block

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):  # a second client of the same cluster says nothing more
            client = kube_client.Client.from_kubeconfig(path)
            for _ in range(25):
                client.get(kinds.NAMESPACE, "default")
            client.close()

    assert [(w.category, str(w.message).split(":")[0]) for w in seen] == [
        (kube_client.InsecureTLSWarning, "TLS verification is off for cluster 'okt-envtest' (https")
    ]
