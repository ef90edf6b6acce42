"""One local Kubernetes node: kube-scheduler plus a kubelet that runs Pods on this machine's Docker.

Why this exists: without a scheduler and a kubelet, Pods stay Pending and a Deployment never becomes available, which
hides exactly what an operator is for — its operand running. Kubernetes 1.20's kubelet still carries dockershim, so
it drives Debian's ``docker.io`` daemon directly; the images come from :mod:`okt.testing.images`. This module holds
the node's parts that do not need a running control plane: whether a node can run here, the command lines, the
machine-wide ownership of Docker, and the cleanup. :class:`okt.testing.envtest.ControlPlane` (``node=True``) starts
and stops the processes.

Guarantees:

* one okt node per machine at a time: the kubelet treats every Kubernetes container in Docker as its own, so a second
  node waits for the first (:class:`Ownership`); a node whose owner died is cleaned up by the next one;
* the node registers as ``localhost`` and the kubelet listens on loopback only (the API server reaches it there for
  exec, logs and port-forward); Pods get addresses on Docker's bridge, reachable from this machine;
* :func:`cleanup` removes every container the kubelet started, unmounts everything mounted under its root directory
  and removes the Pod log directories it wrote, so a stopped node leaves no container, mount or process behind.

Caveats: the kubelet needs root and cgroup v1 (it is Kubernetes 1.20). Pods have no cluster DNS and no
ServiceAccount tokens; Services get no endpoints routing (no kube-proxy): talk to Pod IPs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import pathlib
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

from okt.testing import images

NAME = "localhost"
"""The Node's name and hostname: the API server resolves it to loopback, where the kubelet listens."""
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
CONTAINER_LABEL = "io.kubernetes.docker.type"
"""dockershim's label on every container (sandbox or not) it creates."""
POD_UID_LABEL = "io.kubernetes.pod.uid"
POD_LOGS = pathlib.Path("/var/log/pods")
CONTAINER_LOGS = pathlib.Path("/var/log/containers")
OWNER_WAIT = 240.0
"""Seconds a second node waits for the first to stop (below pytest's per-test timeout, so this message is seen)."""
RUN_DIRECTORY = pathlib.Path("/run/okt")
"""Where the machine's node owner is recorded: one place for every checkout and build cache, forgotten at reboot."""


class NodeError(RuntimeError):
    """The node could not be prepared, owned or cleaned up; the message says why."""


def unavailable(docker: str | None = None) -> str | None:
    """Why a node cannot run on this machine (one line), or None when it can."""
    if os.geteuid() != 0:
        return "the kubelet needs root to run containers and this process is not root"
    reason = images.docker_unavailable(docker)
    if reason is not None:
        return reason
    binary = docker or images.docker_binary() or "docker"
    version = subprocess.run(
        [binary, "info", "--format", "{{.CgroupVersion}}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if version and version != "1":
        return f"Docker runs on cgroup v{version}; Kubernetes 1.20's kubelet needs cgroup v1"
    return None


def kubelet_argv(assets: pathlib.Path, kubeconfig: pathlib.Path, root: pathlib.Path, port: int) -> list[str]:
    """The kubelet's command line: dockershim on the local Docker, loopback only, nothing negative asked of the OS.

    Swap, QoS cgroups, node-allocatable enforcement and eviction are off: a test node shares a developer's machine
    and must neither refuse to start nor evict Pods because of what else runs there.
    """
    return [
        str(assets / "kubelet"),
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={root}",
        f"--cert-dir={root / 'pki'}",
        f"--volume-plugin-dir={root / 'volume-plugins'}",
        f"--hostname-override={NAME}",
        "--address=127.0.0.1",
        f"--port={port}",
        "--read-only-port=0",
        "--healthz-port=0",
        "--container-runtime=docker",
        f"--docker-endpoint={docker_endpoint()}",
        f"--pod-infra-container-image={images.PAUSE}",
        "--fail-swap-on=false",
        "--cgroup-driver=cgroupfs",
        "--cgroups-per-qos=false",
        "--enforce-node-allocatable=",
        "--eviction-hard=",
        "--oom-score-adj=0",
        "--image-gc-high-threshold=100",
        "--image-gc-low-threshold=99",
        "--serialize-image-pulls=false",
        "--v=0",
    ]


def docker_endpoint() -> str:
    """The Docker daemon the ``docker`` command talks to (``DOCKER_HOST``, else the default socket), so the kubelet
    runs Pods where the images were imported."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def scheduler_argv(assets: pathlib.Path, kubeconfig: pathlib.Path) -> list[str]:
    return [
        str(assets / "kube-scheduler"),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--port=0",
        "--secure-port=0",
        "--v=0",
    ]


def is_ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def without_not_ready_taint(node: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that drops the not-ready taint (guarded by the resourceVersion read), or None if there is none.

    The API server's admission taints every new Node ``not-ready``; in a full cluster the controller manager's
    node-lifecycle controller lifts it. That controller also evicts Pods from a node whose heartbeats lag, which a
    busy test machine can cause, so the local node lifts the taint itself once the kubelet reports Ready.
    """
    taints = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
    if len(kept) == len(taints):
        return None
    version = (node.get("metadata") or {}).get("resourceVersion")
    return {"metadata": {"resourceVersion": version}, "spec": {"taints": kept or None}}


# -- ownership of the machine's Docker -------------------------------------------------------------------------------


def _owner_file() -> pathlib.Path:
    return RUN_DIRECTORY / "node.json"


def _identity(pid: int) -> str:
    """A process's identity across pid reuse and reboots: the boot id and its start time, or "" if it is gone."""
    try:
        boot = pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # the command name (field 2) may hold spaces; the start time is the 20th field after its closing parenthesis
    return f"{boot}/{stat.rpartition(')')[2].split()[19]}"


@dataclasses.dataclass(frozen=True)
class Owner:
    """Who runs the machine's node: a process (the kubelet once started), the kubelet's root directory, and since
    when (epoch seconds: Pod log directories written after it are the node's)."""

    pid: int
    identity: str
    root: str
    since: float

    @classmethod
    def of(cls, pid: int, root: pathlib.Path, since: float) -> Owner:
        return cls(pid=pid, identity=_identity(pid), root=str(root), since=since)

    @classmethod
    def read(cls) -> Owner | None:
        try:
            data = json.loads(_owner_file().read_text())
            return cls(
                pid=int(data["pid"]), identity=str(data["identity"]), root=str(data["root"]), since=float(data["since"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool:
        return bool(self.identity) and _identity(self.pid) == self.identity


class Ownership:
    """Claims the machine's Docker for one node: waits while another live kubelet owns it, cleans up after a dead one.

    Use :meth:`claim` before starting the kubelet and :meth:`record` once its pid is known; :func:`stopped` when
    it stopped.
    """

    def __init__(self, out: Callable[[str], None] | None = None, wait: float = OWNER_WAIT) -> None:
        self._out = out
        self._wait = wait
        self._since = 0.0

    def claim(self, root: pathlib.Path) -> None:
        deadline = time.monotonic() + self._wait
        said = False
        while True:
            with _locked():
                owner = Owner.read()
                if owner is None or not owner.alive():
                    if owner is not None:  # its process died without cleaning up (killed, or the machine stopped)
                        dead = pathlib.Path(owner.root)
                        if not cleanup(dead, owner.since):
                            shutil.rmtree(dead, ignore_errors=True)
                    self._since = time.time()
                    _write_owner(Owner.of(os.getpid(), root, self._since))
                    return
            if time.monotonic() >= deadline:
                raise NodeError(
                    f"another okt node runs on this machine (kubelet pid {owner.pid}, root {owner.root}) "
                    f"and did not stop within {self._wait:.0f}s"
                )
            if not said and self._out is not None:
                self._out(f"another okt node runs on this machine (kubelet pid {owner.pid}); waiting for it to stop")
                said = True
            time.sleep(1.0)

    def record(self, kubelet_pid: int, root: pathlib.Path) -> None:
        with _locked():
            _write_owner(Owner.of(kubelet_pid, root, self._since))


def stopped(root: pathlib.Path) -> list[str]:
    """Clean up after the stopped kubelet of ``root`` (:func:`cleanup`) and give the machine's Docker back.

    Returns the mount points that could not be unmounted (none, normally).
    """
    with _locked():
        owner = Owner.read()
        ours = owner is not None and owner.root == str(root)
        left = cleanup(root, owner.since if owner is not None and ours else None)
        if ours:
            _owner_file().unlink(missing_ok=True)
    return left


def _write_owner(owner: Owner) -> None:
    path = _owner_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".tmp")
    staging.write_text(json.dumps(dataclasses.asdict(owner)))
    staging.rename(path)


@contextlib.contextmanager
def _locked() -> Any:
    path = RUN_DIRECTORY / "node.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# -- cleanup -----------------------------------------------------------------------------------------------------------


def kubelet_containers(docker: str) -> list[tuple[str, str]]:
    """(id, pod uid) of every container dockershim created (Pod sandboxes and containers, running or not)."""
    listed = subprocess.run(
        [
            docker,
            "ps",
            "-a",
            "--filter",
            f"label={CONTAINER_LABEL}",
            "--format",
            '{{.ID}} {{.Label "' + POD_UID_LABEL + '"}}',
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    pairs = [line.split(" ", 1) for line in listed.stdout.splitlines() if line.strip()]
    return [(pair[0], pair[1] if len(pair) > 1 else "") for pair in pairs]


def mounts_under(root: pathlib.Path) -> list[str]:
    """Mount points at or below ``root``, deepest first (the order to unmount them)."""
    prefix = str(root).rstrip("/")
    found: list[str] = []
    with contextlib.suppress(OSError):
        for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if len(fields) > 4:
                point = fields[4].replace("\\040", " ")
                if point == prefix or point.startswith(prefix + "/"):
                    found.append(point)
    return sorted(set(found), key=lambda p: (-p.count("/"), p))


def unmount(root: pathlib.Path) -> list[str]:
    """Unmount everything at or below ``root``; returns the mount points that are still there."""
    for _ in range(3):
        points = mounts_under(root)
        if not points:
            return []
        for point in points:
            if subprocess.run(["umount", point], capture_output=True, check=False).returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return mounts_under(root)


def remove_pod_logs(pod_uids: Sequence[str], since: float | None) -> None:
    """The kubelet writes Pod logs under fixed paths (``/var/log/pods``, ``/var/log/containers``): remove the node's,
    i.e. those of ``pod_uids`` and those created since ``since`` (the Pods deleted while the node ran)."""
    uids = {uid for uid in pod_uids if uid}
    for directory in POD_LOGS.glob("*_*_*"):
        with contextlib.suppress(OSError):
            recent = since is not None and directory.stat().st_ctime >= since
            if recent or directory.name.rsplit("_", 1)[-1] in uids:
                shutil.rmtree(directory)
    for link in CONTAINER_LOGS.glob("*.log"):
        if link.is_symlink() and not link.exists():
            link.unlink(missing_ok=True)


def cleanup(root: pathlib.Path | None, since: float | None = None, docker: str | None = None) -> list[str]:
    """Remove the kubelet's containers and Pod logs and unmount its root directory; returns mounts left (if any).

    Call it once the kubelet is stopped (or dead): a running kubelet would restart what is removed. ``since`` (epoch
    seconds) is when the node started: the Pod log directories created after it are removed too.
    """
    binary = docker or images.docker_binary()
    if binary is not None and images.docker_unavailable(binary) is None:
        containers = kubelet_containers(binary)
        if containers:
            removal = [binary, "rm", "-f", "-v", *(cid for cid, _ in containers)]
            subprocess.run(removal, capture_output=True, check=False)
        remove_pod_logs([uid for _, uid in containers], since)
    if root is None or not root.exists():
        return []
    return unmount(root)
