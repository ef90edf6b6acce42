"""A real local Kubernetes control plane: etcd + kube-apiserver + kube-controller-manager on loopback.

Why this exists: every behaviour of okt that talks to Kubernetes is tested against a real kube-apiserver, never a mock.
The binaries come from ``OKT_ENVTEST_ASSETS`` (or ``KUBEBUILDER_ASSETS``), else from the build cache, else they are
built once from Debian's source package (:mod:`okt.testing.build`). etcd comes from Debian's ``etcd-server``.

Guarantees:

* every component listens on a free loopback port, so several control planes can run side by side;
* ``start()`` returns once ``/readyz`` answers ``ok`` and the ``default`` namespace exists;
* the admin is a static token user in ``system:masters``; extra token users (``TokenUser``) can be declared up front,
  which is how tests run an operator as a ServiceAccount-like identity under RBAC;
* ``stop()`` kills every process it started (their whole process groups) and removes the temporary directory; it also
  runs at interpreter exit, and processes started for an owning Python process die with it (``PR_SET_PDEATHSIG``);
  the directory of a plane whose owner was killed outright goes at the next ``start()`` on the machine.

* with ``node=True`` it also runs kube-scheduler and one kubelet on the machine's Docker (:mod:`okt.testing.node`):
  ``start()`` returns once the Node ``localhost`` is Ready and schedulable; Pods run from local images
  (:mod:`okt.testing.images`), and ``stop()`` removes their containers and unmounts the kubelet's directory; unless
  ``controllers`` says otherwise, the controllers running Pods need run too (:data:`NODE_CONTROLLERS`).

Caveats: without ``node=True`` there is no scheduler and no kubelet: Pods stay Pending, Deployments never become
available unless a test patches their status. It is Kubernetes 1.20: PodDisruptionBudget is policy/v1beta1, CronJob
batch/v1beta1.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import dataclasses
import hashlib
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import yaml

from okt.kube import kinds
from okt.testing import build, images, node

DEFAULT_CONTROLLERS = ("garbagecollector", "namespace", "deployment", "replicaset")
NODE_CONTROLLERS = ("statefulset", "endpoint", "root-ca-cert-publisher")
"""Run too, by default, with ``node=True``, where Pods run: a StatefulSet gets its Pods; a Service its Endpoints, so
the API server's Service proxy reaches its Pods (without them it answers ``services "NAME" not found``); every
namespace the ``kube-root-ca.crt`` ConfigMap, so a Pod can mount the API server's CA beside a projected token."""
ADMIN_USER = "okt-admin"
START_TIMEOUT = 90.0
PORT_ATTEMPTS = 5
"""Starts of etcd or the API server tried on fresh ports when one chosen was taken before it could be bound."""
DIRECTORY_PREFIX = "okt-envtest-"
OWNER_FILE = "owner"
"""In a plane's directory: the process that started it (see :func:`_abandoned`)."""


def lists_kind_of(crd: Mapping[str, Any], api_resources: Callable[[str], Mapping[str, Any] | None]) -> bool:
    """Whether discovery lists ``crd``'s kind in every version the CRD serves: what an operator started at once
    looks its kinds up in, a moment after the CRD is Established.

    ``api_resources(path)`` reads a group version's APIResourceList (``/apis/GROUP/VERSION``), None where the server
    does not serve it (404), with whatever client the caller holds.
    """
    spec = crd["spec"]
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        listing = api_resources(f"/apis/{spec['group']}/{version['name']}")
        if listing is None:
            return False
        if not any(item.get("kind") == spec["names"]["kind"] for item in listing.get("resources") or ()):
            return False
    return True


class ControlPlaneError(RuntimeError):
    """The control plane could not be found, built or started; the message says why and where the logs are."""


@dataclasses.dataclass(frozen=True)
class TokenUser:
    """A static bearer-token identity known to the apiserver (``--token-auth-file``)."""

    name: str
    token: str
    groups: tuple[str, ...] = ()

    @classmethod
    def service_account(cls, namespace: str, name: str) -> TokenUser:
        """The identity a ServiceAccount's token would carry (the token itself is random)."""
        return cls(
            name=f"system:serviceaccount:{namespace}:{name}",
            token=secrets.token_hex(16),
            groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
        )


def find_assets(build_if_missing: bool = True, out: Callable[[str], None] | None = None) -> pathlib.Path:
    """The directory holding kube-apiserver and kube-controller-manager."""
    for variable in ("OKT_ENVTEST_ASSETS", "KUBEBUILDER_ASSETS"):
        configured = os.environ.get(variable)
        if configured:
            path = pathlib.Path(configured).expanduser()
            if not build.has_binaries(path):
                raise ControlPlaneError(f"{variable}={path} does not hold {' and '.join(build.BINARIES)}")
            return path
    cached = build.cached_assets()
    if build.has_binaries(cached):
        return cached
    if not build_if_missing:
        raise ControlPlaneError(f"no control-plane binaries in {cached}; run `okt envtest build`")
    try:
        return build.build(out=out)
    except build.BuildError as error:
        raise ControlPlaneError(str(error)) from error


def find_etcd() -> pathlib.Path:
    for candidate in (os.environ.get("OKT_ETCD"), shutil.which("etcd"), "/usr/bin/etcd"):
        if candidate and os.access(candidate, os.X_OK):
            return pathlib.Path(candidate)
    raise ControlPlaneError("etcd not found: install Debian's etcd-server package or set OKT_ETCD")


def free_port() -> int:
    """A port free on loopback now (see :func:`free_ports` for more than one)."""
    (port,) = free_ports(1)
    return port


def free_ports(count: int) -> list[int]:
    """``count`` different ports free on loopback now: each socket is held until all are bound, since two calls of
    :func:`free_port` in a row may be given the same port, the first closed before the second asked."""
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        for _ in range(count):
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
        return ports


def write_private(path: pathlib.Path, text: str) -> None:
    """Write ``text`` to ``path``, readable and writable by its owner only (0600, as kubectl writes a kubeconfig).

    Why: a kubeconfig written here carries a bearer token; with the usual umask a plain write leaves it readable by
    every user of the machine, wherever the caller put it. An existing file is narrowed to 0600 too.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(fd, 0o600)
        handle.write(text)


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """``preexec_fn`` for a child process that must not outlive this one (Linux: PR_SET_PDEATHSIG = SIGKILL)."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) for tests, demos and benchmarks.

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        *,
        assets: pathlib.Path | None = None,
        controllers: Sequence[str] | None = None,
        users: Sequence[TokenUser] = (),
        audit_log: bool = False,
        crds: Sequence[dict[str, Any]] = (),
        tie_to_parent: bool = True,
        node: bool = False,
        out: Callable[[str], None] | None = None,
    ) -> None:
        self._assets = assets
        self._node = node
        self._node_root: pathlib.Path | None = None
        self.node_ready_seconds: float | None = None
        """With ``node=True``: seconds from the start of the node (after the API server) to the Node Ready."""
        if controllers is None:  # what an operator's children need, and with a node what running Pods need
            controllers = (*DEFAULT_CONTROLLERS, *NODE_CONTROLLERS) if node else DEFAULT_CONTROLLERS
        self._controllers = tuple(controllers)
        self.users = (TokenUser(ADMIN_USER, secrets.token_hex(16), ("system:masters",)), *users)
        self._audit = audit_log
        self._crds = tuple(crds)
        self._tie = tie_to_parent
        self._out = out
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._dir: pathlib.Path | None = None
        self.etcd_port = 0
        self.port = 0

    # -- public surface ------------------------------------------------------------------------------------------

    @property
    def controllers(self) -> tuple[str, ...]:
        """The kube-controller-manager's controllers this plane runs (none: no controller manager)."""
        return self._controllers

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return self.users[0].token

    @property
    def directory(self) -> pathlib.Path:
        if self._dir is None:
            raise ControlPlaneError("the control plane is not started")
        return self._dir

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.directory / "kubeconfig"

    @property
    def ca_file(self) -> pathlib.Path:
        """The apiserver's self-generated serving certificate chain (its CA included): clients verify TLS with it."""
        return self.directory / "certs" / "apiserver.crt"

    @property
    def audit_log_path(self) -> pathlib.Path:
        return self.directory / "audit.log"

    def kubeconfig_for(
        self, user: TokenUser, path: pathlib.Path | None = None, *, compression: bool = True
    ) -> pathlib.Path:
        """Write a kubeconfig authenticating as ``user`` (readable by its owner only) and return its path.

        Without ``path`` it goes into :attr:`directory`, named by a digest of the user's name and token: two users
        never share a file (tokens chosen by hand often begin alike), and the name gives away nothing of the token.
        ``compression=False`` sets the cluster's ``disable-compression`` (answers as an in-cluster client of okt's
        asks for them: not gzipped).
        """
        identity = hashlib.sha256(f"{user.name}\n{user.token}".encode()).hexdigest()[:16]
        target = path or self.directory / f"kubeconfig-{identity}"
        cluster: dict[str, Any] = {"server": self.url, "certificate-authority": str(self.ca_file)}
        if not compression:
            cluster["disable-compression"] = True
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "okt-envtest", "cluster": cluster}],
            "users": [{"name": user.name, "user": {"token": user.token}}],
            "contexts": [
                {
                    "name": "okt-envtest",
                    "context": {"cluster": "okt-envtest", "user": user.name, "namespace": "default"},
                }
            ],
            "current-context": "okt-envtest",
        }
        write_private(target, yaml.safe_dump(doc, sort_keys=False))
        return target

    def start(self) -> ControlPlane:
        """Start every component; returns once the API server is ready (see the module's guarantees).

        Raises:
            ControlPlaneError: a component cannot be found or started, or this plane is already started (a second
                start would run a second plane and lose the first's processes and directory to :meth:`stop`).
        """
        if self._dir is not None:
            raise ControlPlaneError(f"the control plane in {self._dir} is already started: stop() it first")
        assets = self._assets or find_assets(out=self._out)
        etcd = find_etcd()
        shm = pathlib.Path("/dev/shm")
        parent = shm if shm.is_dir() else pathlib.Path(tempfile.gettempdir())
        _remove_abandoned(parent)
        self._dir = pathlib.Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX, dir=parent))
        atexit.register(self.stop)
        try:
            (self._dir / OWNER_FILE).write_text(_process_identity(os.getpid()) or "")
            self._prepare_files()
            self._on_free_ports("etcd", lambda: self._start_etcd(etcd), self._forget_etcd_ports)
            self._on_free_ports("kube-apiserver", lambda: self._start_apiserver(assets), self._forget_apiserver_port)
            self.kubeconfig_for(self.users[0], self.kubeconfig)
            for crd in self._crds:
                self.install_crd(crd)
            if self._controllers:
                self._start_controller_manager(assets)
            if self._node:
                self._start_node(assets)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for name in reversed(list(self._procs)):
            self._kill(name)
        self._procs.clear()
        kept = False
        if self._node_root is not None:
            kept = not _stop_node(self._node_root, self._out)
            self._node_root = None
        if self._dir is not None:
            if not kept:
                shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        atexit.unregister(self.stop)

    def process_ids(self) -> dict[str, int]:
        """The running processes of the control plane by name (``etcd``, ``kube-apiserver``, ...)."""
        return {name: proc.pid for name, proc in self._procs.items() if proc.poll() is None}

    def detach(self) -> dict[str, Any]:
        """Leave the processes running past this Python process; returns what :func:`stop_detached` needs."""
        state = {
            "pids": {name: proc.pid for name, proc in self._procs.items()},
            "directory": str(self.directory),
            "kubeconfig": str(self.kubeconfig),
            "url": self.url,
        }
        if self._node_root is not None:
            state["node_root"] = str(self._node_root)
            self._node_root = None
        self._procs.clear()
        self._dir = None
        atexit.unregister(self.stop)
        return state

    def install_crd(self, crd: dict[str, Any], timeout: float = 30.0) -> None:
        """Create a CRD (if missing) and wait until it is Established and discovery lists its kind in every version
        it serves (a moment later: an operator started at once looks its kinds up there).

        CRDs installed before :meth:`start` returns (``crds=``) are known to the garbage collector from its first
        discovery; a CRD added later is only picked up at its next periodic rediscovery (about 30 s) unless
        :meth:`restart_controller_manager` is called.
        """
        name = crd["metadata"]["name"]
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        try:
            self.request("POST", path, crd)
        except urllib.error.HTTPError as error:
            if error.code != 409:
                raise ControlPlaneError(
                    f"cannot install CRD {name}: {error.read().decode(errors='replace')}"
                ) from error
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if kinds.is_established(self.request("GET", f"{path}/{name}")) and lists_kind_of(crd, self._api_resources):
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"CRD {name} not Established and listed by discovery after {timeout:.0f}s")

    def _api_resources(self, path: str) -> dict[str, Any] | None:
        """The APIResourceList at ``path``, or None where the server does not serve that group version."""
        try:
            listing: dict[str, Any] = self.request("GET", path)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
            return None
        return listing

    def restart_controller_manager(self) -> None:
        """Restart kube-controller-manager (e.g. so its garbage collector discovers CRDs added since it started)."""
        if "kube-controller-manager" not in self._procs:
            return
        self._kill("kube-controller-manager")
        self._start_controller_manager(self._assets or find_assets(build_if_missing=False))

    def stop_apiserver(self) -> None:
        """Kill the apiserver (as a crash would); :meth:`start_apiserver` brings it back on the same port."""
        self._kill("kube-apiserver")

    def start_apiserver(self) -> None:
        self._start_apiserver(self._assets or find_assets(build_if_missing=False))

    def delete_from_etcd(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> bool:
        """Delete an object's key in etcd, past the API server: its watchers see it ``DELETED`` with its finalizers
        still on — what a deletion that did not wait for them looks like (the API server's race of Kubernetes issue
        77988). Returns whether the key existed.

        Raises:
            ValueError: ``kind`` is built in (only a custom resource's key, ``/registry/<group>/<plural>/...``, is
                known here).
        """
        if (kind.api_version, kind.kind) in kinds.BUILTIN:
            raise ValueError(f"{kind} is built in: only custom resources can be deleted from etcd here")
        prefix = f"/registry/{kind.group}/{kind.plural}"
        key = f"{prefix}/{namespace}/{name}" if kind.namespaced else f"{prefix}/{name}"
        return int(self._etcd("deleterange", {"key": base64.b64encode(key.encode()).decode()}).get("deleted") or 0) > 0

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision, as the API server does every few minutes: a list's
        continue token from before it, or a watch of etcd from before it, is answered 410 Gone. Returns the revision.
        """
        revision = int(self._etcd("range", {"key": base64.b64encode(b"/registry").decode()})["header"]["revision"])
        self._etcd("compaction", {"revision": revision, "physical": True})
        return revision

    def _etcd(self, call: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One call of etcd's v3 JSON gateway."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}/v3/kv/{call}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            result: dict[str, Any] = json.loads(answer.read())
            return result

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    def back_up_etcd(self, target: pathlib.Path) -> pathlib.Path:
        """Copy etcd's data into ``target`` (a folder not there yet) as it is now, for :meth:`restore_etcd`; the API
        server and etcd are stopped for the copy, and started again (the API server on its port). Returns
        ``target``."""
        self._with_etcd_stopped(lambda data: shutil.copytree(data, target))
        return target

    def restore_etcd(self, backup: pathlib.Path, *, bump_revision: bool = True) -> None:
        """Put a copy :meth:`back_up_etcd` made in place of etcd's data, as Kubernetes' documented restore does
        (``etcdutl snapshot restore --bump-revision --mark-compacted``): every object as it was at the backup, with
        the resourceVersion it had then, and the revision moved past the highest etcd reached before and compacted,
        so that a watch from before the restore is answered 410 Gone and its client lists again. Without
        ``bump_revision``, as a plain restore does, the revision goes back to the backup's: a watch from a later one
        is answered nothing until etcd passes it. The API server and etcd are restarted (the API server on its
        port)."""

        def restore(data: pathlib.Path) -> None:
            shutil.rmtree(data)
            shutil.copytree(backup, data)

        self._with_etcd_stopped(restore, bump=bump_revision)

    def _etcd_revision(self) -> int:
        return int(self._etcd("range", {"key": base64.b64encode(b"/registry").decode()})["header"]["revision"])

    def _with_etcd_stopped(self, change: Callable[[pathlib.Path], Any], bump: bool = False) -> None:
        assets = self._assets or find_assets(build_if_missing=False)
        self.stop_apiserver()
        reached = self._etcd_revision()  # nothing writes any more: the API server was its only client
        self._kill("etcd")
        change(self.directory / "etcd")
        self._on_free_ports("etcd", lambda: self._start_etcd(find_etcd()), lambda: None)
        if bump:
            scratch = base64.b64encode(b"/okt-testing/revision-bump").decode()
            while self._etcd_revision() <= reached:
                self._etcd("put", {"key": scratch, "value": ""})
            self._etcd("deleterange", {"key": scratch})
            self._etcd("compaction", {"revision": self._etcd_revision(), "physical": True})
        self._start_apiserver(assets)

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        """A minimal JSON request with the admin token (for the control plane's own checks and tests)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token or self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/merge-patch+json" if method == "PATCH" else "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with urllib.request.urlopen(req, context=context, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw and raw[:1] in (b"{", b"[") else raw.decode()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------------------------------

    def _say(self, line: str) -> None:
        if self._out is not None:
            self._out(line)

    def _prepare_files(self) -> None:
        d = self.directory
        (d / "certs").mkdir()
        key = d / "sa.key"
        completed = subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], capture_output=True, check=False)
        if completed.returncode != 0:
            raise ControlPlaneError(f"openssl genrsa failed: {completed.stderr.decode().strip()}")
        lines = [f'{u.token},{u.name},{u.name},"{",".join(u.groups)}"' for u in self.users]
        (d / "tokens.csv").write_text("\n".join(lines) + "\n")
        if self._audit:
            policy = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Metadata"}]}
            (d / "audit-policy.yaml").write_text(yaml.safe_dump(policy))

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = (self.directory / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent if self._tie else None,  # noqa: PLW1509 - must die with its owner
        )
        log.close()
        self._procs[name] = proc
        return proc

    def _kill(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def _wait(self, name: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        proc = self._procs[name]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {proc.returncode}: {self._tail(name)}")
            with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
                if ready():
                    return
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} not ready after {START_TIMEOUT:.0f}s: {self._tail(name)}")

    def _tail(self, name: str) -> str:
        """The last lines of ``name``'s log, for the error that says it failed, and where its whole log is kept.

        The failure stops the plane, and stopping removes its directory: the log is copied out of it first, beside
        the system's temporary files, under the plane's directory name (a retry on other ports overwrites it).
        """
        log = self.directory / f"{name}.log"
        try:
            text = log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        kept = self._kept_log(name)
        try:
            shutil.copyfile(log, kept)
        except OSError:
            kept = log
        return " | ".join(text.strip().splitlines()[-3:]) + f" (log: {kept})"

    def _kept_log(self, name: str) -> pathlib.Path:
        """Where :meth:`_tail` keeps a copy of ``name``'s log."""
        return pathlib.Path(tempfile.gettempdir()) / f"{self.directory.name}-{name}.log"

    def _on_free_ports(self, name: str, start: Callable[[], None], forget_ports: Callable[[], None]) -> None:
        """``start()``, again on other ports while ``name`` finds one of its ports taken: a port free when chosen can
        be given to another process's connection before ``name`` binds it (the kernel hands out the same range)."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                start()
                return
            except ControlPlaneError as exc:
                if "address already in use" not in str(exc) or attempt == PORT_ATTEMPTS:
                    raise
                self._kept_log(name).unlink(missing_ok=True)  # told of nothing: the next attempt starts afresh
                self._kill(name)
                forget_ports()

    def _forget_etcd_ports(self) -> None:
        self.etcd_port = 0
        shutil.rmtree(self.directory / "etcd", ignore_errors=True)

    def _forget_apiserver_port(self) -> None:
        self.port = 0

    def _start_etcd(self, etcd: pathlib.Path) -> None:
        self.etcd_port, peer = free_ports(2)
        client = f"http://127.0.0.1:{self.etcd_port}"
        self._spawn(
            "etcd",
            [
                str(etcd),
                "--data-dir",
                str(self.directory / "etcd"),
                "--listen-client-urls",
                client,
                "--advertise-client-urls",
                client,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer}",
                "--quota-backend-bytes",
                str(4 * 1024**3),
            ],
        )

        def healthy() -> bool:
            with urllib.request.urlopen(f"{client}/health", timeout=2) as response:
                return b"true" in response.read()

        self._wait("etcd", healthy)

    def _start_apiserver(self, assets: pathlib.Path) -> None:
        if not self.port:
            self.port = free_port()
        d = self.directory
        argv = [
            str(assets / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            "--insecure-port=0",
            f"--cert-dir={d / 'certs'}",
            f"--service-account-key-file={d / 'sa.key'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--token-auth-file={d / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--disable-admission-plugins=ServiceAccount",
            # As in many production clusters: blockOwnerDeletion needs update on the owner's finalizers, so a test
            # of an operator's RBAC sees the permission it would miss there.
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
            "--allow-privileged=true",
            "--max-requests-inflight=1000",
            "--max-mutating-requests-inflight=500",
            "--v=0",
        ]
        if self._node:
            # No kube-proxy routes a ClusterIP: the API server calls a webhook Service's endpoints (its Pods) itself.
            argv.append("--enable-aggregator-routing=true")
        if self._audit:
            argv += [
                f"--audit-policy-file={d / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log_path}",
                "--audit-log-format=json",
                "--audit-log-mode=batch",
                "--audit-log-batch-max-wait=1s",
                # Never rotate (the default rotates at 100 MB, which a benchmark of 1000 objects passes): readers
                # follow this one file by offset.
                "--audit-log-maxsize=1000000",
            ]
        self._spawn("kube-apiserver", argv)

        def ready() -> bool:
            if self.request("GET", "/readyz") != "ok":
                return False
            self.request("GET", "/api/v1/namespaces/default")
            return True

        self._wait("kube-apiserver", ready)

    def _start_node(self, assets: pathlib.Path) -> None:
        started = time.monotonic()
        reason = node.unavailable()
        if reason is not None:
            raise ControlPlaneError(f"no local node: {reason}")
        if not build.has_binaries(assets, node=True):
            raise ControlPlaneError(
                f"{assets} does not hold {', '.join(build.NODE_BINARIES)}: run `okt envtest build` (or point "
                "OKT_ENVTEST_ASSETS at a build that has them)"
            )
        try:
            images.ensure(assets, build.revision(), out=self._out)
        except (images.ImageError, OSError) as error:
            raise ControlPlaneError(f"cannot prepare the node's images: {error}") from error
        root = self.directory / "kubelet"
        root.mkdir()
        ownership = node.Ownership(out=self._out)
        try:
            ownership.claim(root)
        except node.NodeError as error:
            raise ControlPlaneError(str(error)) from error
        self._node_root = root
        self._spawn("kube-scheduler", node.scheduler_argv(assets, self.kubeconfig))
        kubelet = self._spawn("kubelet", node.kubelet_argv(assets, self.kubeconfig, root, free_port()))
        ownership.record(kubelet.pid, root)

        def schedulable() -> bool:
            live = self.request("GET", f"/api/v1/nodes/{node.NAME}")
            if not node.is_ready(live):
                return False
            patch = node.without_not_ready_taint(live)
            if patch is None:
                return True
            self.request("PATCH", f"/api/v1/nodes/{node.NAME}", patch)
            return False

        self._wait("kubelet", schedulable)
        self.node_ready_seconds = time.monotonic() - started

    def _start_controller_manager(self, assets: pathlib.Path) -> None:
        argv = [
            str(assets / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig}",
            f"--controllers={','.join(self._controllers)}",
            # The CA a Pod's projected ``kube-root-ca.crt`` ConfigMap holds (the root-ca-cert-publisher controller
            # writes it into every namespace): an in-cluster client verifies the API server with it.
            f"--root-ca-file={self.ca_file}",
            "--leader-elect=false",
            "--port=0",
            "--secure-port=0",
            "--concurrent-gc-syncs=20",
            "--concurrent-deployment-syncs=10",
            "--concurrent-replicaset-syncs=10",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--v=0",
        ]
        proc = self._spawn("kube-controller-manager", argv)
        time.sleep(0.3)
        if proc.poll() is not None:
            raise ControlPlaneError(f"kube-controller-manager exited: {self._tail('kube-controller-manager')}")


def _stop_node(root: pathlib.Path, out: Callable[[str], None] | None) -> bool:
    """Clean up after a stopped kubelet; False (and a line saying so) when mounts are left under ``root``."""
    left = node.stopped(root)
    if left and out is not None:
        out(f"could not unmount {', '.join(left)}; leaving {root.parent} in place")
    return not left


def _runs_plane_process(pid: int, directory: str) -> bool:
    """Whether ``pid`` is still a process of the plane in ``directory``: each one names it in its command line.

    Why: the pids of a detached plane outlive it in the state file; after a reboot, or once the plane died, the same
    numbers may be someone else's process groups by now.
    """
    try:
        command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return bool(directory) and os.fsencode(directory) in command


def _process_identity(pid: int) -> str | None:
    """``pid`` with its start time and PID namespace, or None when no such process runs (a pid alone may be another
    process's by now)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
    return f"{pid} {stat[stat.rindex(')') + 2 :].split()[19]} {namespace}"


def _abandoned(directory: pathlib.Path) -> bool:
    """Whether ``directory`` is left by a plane whose owner died without stopping it (killed outright: no ``stop()``,
    no atexit; its processes died with it): the owner no longer runs, no process runs the plane, and it has no node.

    A directory without an owner file is never abandoned (it is being made, or an older okt made it); nor is one
    whose owner ran in another PID namespace (this one cannot tell), nor a node's, whose mounts the next node cleans
    up (:mod:`okt.testing.node`). A detached plane's processes outlive its owner and keep it.
    """
    try:
        owner = (directory / OWNER_FILE).read_text()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return False
    pid = owner.split(" ", 1)[0]
    if not pid.isdigit() or not owner.endswith(f" {namespace}") or _process_identity(int(pid)) == owner:
        return False
    if (directory / "kubelet").exists():
        return False
    return not any(
        _runs_plane_process(int(entry.name), str(directory))
        for entry in pathlib.Path("/proc").iterdir()
        if entry.name.isdigit()
    )


def _remove_abandoned(parent: pathlib.Path) -> None:
    """Remove the directories in ``parent`` that planes killed outright left (etcd's data, in memory under
    ``/dev/shm``, and the tokens): the first plane started after such a death cleans up after it."""
    for directory in parent.glob(f"{DIRECTORY_PREFIX}*"):
        if directory.is_dir() and directory.stat().st_uid == os.getuid() and _abandoned(directory):
            shutil.rmtree(directory, ignore_errors=True)


def detached_running(state: dict[str, Any]) -> bool:
    """Whether any process of the plane :meth:`ControlPlane.detach` described in ``state`` still runs."""
    directory = str(state.get("directory", ""))
    return any(_runs_plane_process(int(pid), directory) for pid in state.get("pids", {}).values())


def stop_detached(state: dict[str, Any], out: Callable[[str], None] | None = None) -> None:
    """Stop a control plane left running by :meth:`ControlPlane.detach` (process groups, the node, its directory).

    Only the recorded processes still running the plane are signalled (see :func:`_runs_plane_process`).
    """
    directory = str(state.get("directory", ""))
    pids = [int(pid) for pid in state.get("pids", {}).values() if _runs_plane_process(int(pid), directory)]
    for pid in reversed(pids):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    if state.get("node_root") and not _stop_node(pathlib.Path(state["node_root"]), out):
        return
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def control_plane(**kwargs: Any) -> Iterator[ControlPlane]:
    """``with control_plane() as cp:`` — start, yield, always stop."""
    plane = ControlPlane(**kwargs)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
