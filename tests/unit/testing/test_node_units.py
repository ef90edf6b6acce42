"""Behaviour of the local node's pure parts: the oom_score_adj patch, image root filesystems, the kubelet's command
line, the not-ready taint, ownership identities and the mount table reading. The node itself is tested in
``tests/integration/node``.
"""

from __future__ import annotations

import io
import os
import pathlib
import tarfile

import pytest

from okt.testing import build, images, node

DOCKER_SANDBOX = """const (
\tdefaultSandboxImage = "k8s.gcr.io/pause:3.2"

\tdefaultSandboxOOMAdj int = -998
)
"""
QOS_POLICY = """const (
\tKubeletOOMScoreAdj int = -999
\tguaranteedOOMScoreAdj int = -997
\tbesteffortOOMScoreAdj int = 1000
)
"""


def kubelet_tree(root: pathlib.Path, sandbox: str = DOCKER_SANDBOX, policy: str = QOS_POLICY) -> pathlib.Path:
    for (relative, _, _), text in zip(build.OOM_SCORE_ADJUSTMENTS, (sandbox, policy), strict=True):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_oom_patch_sets_the_sandbox_and_guaranteed_adjustments_to_zero(tmp_path: pathlib.Path) -> None:
    source = kubelet_tree(tmp_path)

    assert build.patch_oom_score_adj(source) is True

    assert "defaultSandboxOOMAdj int = 0\n" in (source / build.OOM_SCORE_ADJUSTMENTS[0][0]).read_text()
    policy = (source / build.OOM_SCORE_ADJUSTMENTS[1][0]).read_text()
    assert "guaranteedOOMScoreAdj int = 0\n" in policy
    assert "KubeletOOMScoreAdj int = -999" in policy  # a flag covers the kubelet's own adjustment


def test_the_oom_patch_leaves_a_patched_tree_alone(tmp_path: pathlib.Path) -> None:
    source = kubelet_tree(tmp_path)
    build.patch_oom_score_adj(source)

    assert build.patch_oom_score_adj(source) is False


def test_the_oom_patch_refuses_a_tree_it_does_not_recognise(tmp_path: pathlib.Path) -> None:
    source = kubelet_tree(tmp_path, sandbox="const defaultSandboxOOMAdj = -999\n")

    with pytest.raises(build.BuildError, match=r"docker_sandbox\.go"):
        build.patch_oom_score_adj(source)


def test_a_build_is_complete_for_a_node_only_with_the_scheduler_kubelet_and_pause(tmp_path: pathlib.Path) -> None:
    for name in build.BINARIES:
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert build.has_binaries(tmp_path)
    assert not build.has_binaries(tmp_path, node=True)

    for name in build.NODE_BINARIES:
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    assert build.has_binaries(tmp_path, node=True)


# -- images -----------------------------------------------------------------------------------------------------------


def members(image: images.Image) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(image.tar())) as archive:
        return {member.name: member for member in archive.getmembers()}


def test_an_image_root_filesystem_holds_its_files_links_and_texts(tmp_path: pathlib.Path) -> None:
    binary = tmp_path / "tool"
    binary.write_bytes(b"\x7fELF")
    binary.chmod(0o755)
    image = images.Image(
        "tool:1", files=(("bin/tool", binary),), links=(("bin/alias", "/bin/tool"),), texts=(("etc/motd", "hi\n"),)
    )

    found = members(image)

    assert found["bin/tool"].mode == 0o755
    assert found["bin/tool"].uid == 0
    assert found["bin/alias"].issym()
    assert found["bin/alias"].linkname == "/bin/tool"
    assert found["tmp"].mode == 0o1777
    assert {"proc", "sys", "dev", "etc/motd"} <= set(found)


def test_an_image_root_filesystem_is_the_same_bytes_every_time(tmp_path: pathlib.Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF pause")

    assert images.pause_image(binary).tar() == images.pause_image(binary).tar()


def test_the_pause_image_has_the_name_the_kubelet_expects(tmp_path: pathlib.Path) -> None:
    image = images.pause_image(tmp_path / "pause")

    assert image.name == "k8s.gcr.io/pause:3.2"
    assert image.changes == ('ENTRYPOINT ["/pause"]',)


@pytest.mark.skipif(not images.BUSYBOX_PATH.is_file(), reason="Debian's busybox-static is not installed")
def test_the_busybox_image_links_every_applet_to_busybox() -> None:
    found = members(images.busybox_image())

    assert found["bin/sh"].linkname == "/bin/busybox"
    assert found["bin/busybox"].isfile()


@pytest.mark.skipif(not images.MEMCACHED_PATH.is_file(), reason="Debian's memcached is not installed")
def test_the_memcached_image_carries_the_libraries_memcached_links_and_runs_as_memcache() -> None:
    image = images.memcached_image()
    found = members(image)

    for library in images.shared_libraries(images.MEMCACHED_PATH):
        assert str(library).lstrip("/") in found
    assert f"USER {images.MEMCACHED_UID}" in image.changes
    assert image.name == "memcached:1.6"


def test_a_missing_package_is_named(tmp_path: pathlib.Path) -> None:
    with pytest.raises(images.ImageError, match="memcached package"):
        images.memcached_image(tmp_path / "memcached")


# -- the node ---------------------------------------------------------------------------------------------------------


def test_the_kubelet_listens_on_loopback_under_its_root_and_asks_nothing_negative_of_the_os(
    tmp_path: pathlib.Path,
) -> None:
    argv = node.kubelet_argv(tmp_path / "bin", tmp_path / "kubeconfig", tmp_path / "root", 41000)

    assert argv[0] == str(tmp_path / "bin" / "kubelet")
    assert {
        "--address=127.0.0.1",
        "--port=41000",
        "--hostname-override=localhost",
        "--oom-score-adj=0",
        f"--root-dir={tmp_path / 'root'}",
        f"--pod-infra-container-image={images.PAUSE}",
    } <= set(argv)
    directories = [arg.split("=", 1)[1] for arg in argv if arg.split("=", 1)[0].endswith("-dir")]
    assert len(directories) == 3
    assert all(path.startswith(str(tmp_path / "root")) for path in directories)


@pytest.mark.parametrize(
    ("docker_host", "endpoint"),
    [
        (None, "unix:///var/run/docker.sock"),
        ("unix:///run/user/1000/docker.sock", "unix:///run/user/1000/docker.sock"),
        ("tcp://127.0.0.1:2375", "tcp://127.0.0.1:2375"),
    ],
)
def test_the_kubelet_uses_the_docker_socket_the_docker_command_uses(
    docker_host: str | None, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if docker_host is None:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    else:
        monkeypatch.setenv("DOCKER_HOST", docker_host)

    assert node.docker_endpoint() == endpoint


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], True),
        ([{"type": "Ready", "status": "False"}], False),
        ([{"type": "MemoryPressure", "status": "False"}], False),
        ([], False),
    ],
)
def test_a_node_is_ready_only_with_a_true_ready_condition(conditions: list[dict[str, str]], ready: bool) -> None:
    assert node.is_ready({"status": {"conditions": conditions}}) is ready


def test_the_not_ready_taint_is_dropped_and_other_taints_kept_under_the_read_version() -> None:
    other = {"key": "dedicated", "value": "tests", "effect": "NoSchedule"}
    live = {
        "metadata": {"resourceVersion": "42"},
        "spec": {"taints": [{"key": node.NOT_READY_TAINT, "effect": "NoSchedule"}, other]},
    }

    assert node.without_not_ready_taint(live) == {"metadata": {"resourceVersion": "42"}, "spec": {"taints": [other]}}


def test_the_last_taint_dropped_removes_the_list() -> None:
    live = {"metadata": {"resourceVersion": "7"}, "spec": {"taints": [{"key": node.NOT_READY_TAINT}]}}

    assert node.without_not_ready_taint(live) == {"metadata": {"resourceVersion": "7"}, "spec": {"taints": None}}


def test_a_node_without_the_not_ready_taint_needs_no_patch() -> None:
    assert node.without_not_ready_taint({"metadata": {"resourceVersion": "1"}, "spec": {}}) is None


def test_an_owner_is_alive_while_its_process_runs_and_not_after() -> None:
    assert node.Owner.of(os.getpid(), pathlib.Path("/x"), 0.0).alive()
    assert not node.Owner(pid=os.getpid(), identity="another-boot/1", root="/x", since=0.0).alive()
    assert not node.Owner(pid=2**22 + 1, identity="", root="/x", since=0.0).alive()


def test_no_mounts_are_found_under_a_plain_directory(tmp_path: pathlib.Path) -> None:
    assert node.mounts_under(tmp_path) == []


def test_mounts_are_listed_deepest_first() -> None:
    points = node.mounts_under(pathlib.Path("/"))

    assert points  # / itself at least
    depths = [point.count("/") for point in points]
    assert depths == sorted(depths, reverse=True)
