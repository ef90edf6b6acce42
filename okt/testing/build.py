"""Build kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from Debian's ``kubernetes`` package.

Why this exists: no Kubernetes binaries can be downloaded on the machines okt is developed and tested on, but Debian
ships the complete source of Kubernetes 1.20.2 (with its ``vendor/`` tree). Building it takes minutes, so it happens
once per machine and the binaries are cached outside any checkout (``~/.cache/okt/envtest/1.20.2-okt<revision>``).
The same build compiles the ``pause`` binary of Kubernetes' ``build/pause`` (static C, with Debian's gcc) and, when
Docker answers, imports the local node's images (:mod:`okt.testing.images`).

Guarantees:

* every step prints its number, its name and the elapsed time while it runs; a failed step names itself and the log
  file that holds its output;
* the vendored ``modern-go/reflect2`` v1.0.1 is fixed before building: with Go >= 1.18 its two-field ``hiter`` and
  two-argument ``mapiterinit`` corrupt memory on map iteration (the apiserver panics on the first custom resource);
* the kubelet never asks for a negative ``oom_score_adj`` (refused on sandboxed machines, even to root);
* the API server's owner-reference admission looks a kind it does not know up in discovery again at once (a stock
  1.20 API server learns new kinds every 30 s and refuses a ``blockOwnerDeletion`` reference to one until then);
* a finished build is published atomically (binaries land in a temporary directory that is renamed into place).

Caveats: the build needs root for ``apt-get`` (the packages in :data:`BUILD_PACKAGES`) unless they are already
installed. Docker itself (``docker.io``) is not installed here: the node is optional, and images missing from Docker
are imported when a node starts.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO

from okt.testing import images

KUBE_VERSION = "1.20.2"
BUILD_REVISION = 4
"""Bumped whenever okt patches the sources differently, so machines rebuild instead of reusing an older build."""
BINARIES = ("kube-apiserver", "kube-controller-manager")
"""What a control plane needs (also what ``OKT_ENVTEST_ASSETS`` / ``KUBEBUILDER_ASSETS`` must hold)."""
NODE_BINARIES = ("kube-scheduler", "kubelet", images.PAUSE_BINARY)
"""What a local node needs besides; every build makes them."""
GO_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")
BUILD_PACKAGES = (
    "golang-go",
    "rsync",
    "jq",
    "etcd-server",
    "dpkg-dev",
    "gcc",
    "libc6-dev",
    "busybox-static",
    "memcached",
)
PROGRESS_EVERY = 20.0


class BuildError(RuntimeError):
    """A build step failed; the message names the step and the log file."""


def cache_root() -> pathlib.Path:
    """The directory holding the cached control-plane builds (``OKT_ENVTEST_CACHE`` overrides it)."""
    configured = os.environ.get("OKT_ENVTEST_CACHE")
    if configured:
        return pathlib.Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "okt" / "envtest"


def cached_assets() -> pathlib.Path:
    return cache_root() / revision()


def revision() -> str:
    """This build's name (``1.20.2-okt4``), also the label of the images it imports."""
    return f"{KUBE_VERSION}-okt{BUILD_REVISION}"


def has_binaries(directory: pathlib.Path, node: bool = False) -> bool:
    names = BINARIES + NODE_BINARIES if node else BINARIES
    return all(os.access(directory / name, os.X_OK) for name in names)


class _Progress:
    """Prints a heartbeat line for the running step so a long build never sits silent."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self._out = out
        self._started = time.monotonic()
        self._label = ""
        self._step_started = self._started
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="okt-build-progress", daemon=True)

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1)

    def step(self, label: str) -> None:
        self._label = label
        self._step_started = time.monotonic()
        self._out(f"okt envtest build: {label} (total {self._elapsed(self._started)})")

    def _elapsed(self, since: float) -> str:
        seconds = int(time.monotonic() - since)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _beat(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY):
            self._out(f"okt envtest build:   ... {self._label} running for {self._elapsed(self._step_started)}")


def _run(
    argv: Sequence[str], log: pathlib.Path, cwd: pathlib.Path | None = None, env: dict[str, str] | None = None
) -> None:
    with log.open("ab") as sink:
        sink.write(f"\n$ {' '.join(argv)}\n".encode())
        sink.flush()
        completed = subprocess.run(list(argv), cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if completed.returncode != 0:
        raise subprocess.CalledProcessError(completed.returncode, list(argv))


def _has_deb_src() -> bool:
    candidates = [pathlib.Path("/etc/apt/sources.list"), *pathlib.Path("/etc/apt/sources.list.d").glob("*")]
    for path in candidates:
        try:
            text = path.read_text()
        except OSError:
            continue
        if "deb-src" in text and not path.name.endswith(".disabled"):
            return True
    return False


def _enable_deb_src(log: pathlib.Path) -> None:
    if _has_deb_src():
        return
    source = pathlib.Path("/etc/apt/sources.list.d/debian.sources")
    if source.exists():
        text = source.read_text().replace("Types: deb\n", "Types: deb-src\n")
        pathlib.Path("/etc/apt/sources.list.d/okt-deb-src.sources").write_text(text)
        return
    legacy = pathlib.Path("/etc/apt/sources.list")
    lines = [line.replace("deb ", "deb-src ", 1) for line in legacy.read_text().splitlines() if line.startswith("deb ")]
    pathlib.Path("/etc/apt/sources.list.d/okt-deb-src.list").write_text("\n".join(lines) + "\n")


def _install_packages(log: pathlib.Path) -> None:
    missing = [
        pkg
        for pkg in BUILD_PACKAGES
        if subprocess.run(["dpkg", "-s", pkg], capture_output=True, check=False).returncode != 0
    ]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-q"], log, env=env)
    if missing:
        _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], log, env=env)


def _download_source(work: pathlib.Path, log: pathlib.Path) -> None:
    if list(work.glob("kubernetes_*.dsc")):
        return
    _run(["apt-get", "source", "--download-only", "kubernetes"], log, cwd=work)


def _extract_source(work: pathlib.Path, log: pathlib.Path) -> pathlib.Path:
    source = work / "src"
    if (source / "Makefile").exists():
        return source
    shutil.rmtree(source, ignore_errors=True)
    dsc = sorted(work.glob("kubernetes_*.dsc"))[-1]
    _run(["dpkg-source", "--no-check", "-x", dsc.name, "src"], log, cwd=work)
    return source


HITER_FULL = """type hiter struct {
	key         unsafe.Pointer
	value       unsafe.Pointer
	t           unsafe.Pointer
	h           unsafe.Pointer
	buckets     unsafe.Pointer
	bptr        unsafe.Pointer
	overflow    *[]unsafe.Pointer
	oldoverflow *[]unsafe.Pointer
	startBucket uintptr
	offset      uint8
	wrapped     bool
	B           uint8
	i           uint8
	bucket      uintptr
	checkBucket uintptr
}"""


def patch_reflect2(source: pathlib.Path) -> bool:
    """Give reflect2's ``hiter`` the runtime's full layout and call ``mapiterinit`` with three arguments.

    Returns whether anything was changed (an already patched tree is left alone).
    """
    pkg = source / "vendor" / "github.com" / "modern-go" / "reflect2"
    link = pkg / "unsafe_link.go"
    umap = pkg / "unsafe_map.go"
    link_text = link.read_text()
    if "checkBucket" in link_text:
        return False
    old_decl = "func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) *hiter"
    start = link_text.index("type hiter struct {")
    end = link_text.index("}", start) + 1
    if old_decl not in link_text:
        raise BuildError(f"reflect2 layout not recognised in {link}")
    link_text = link_text[:start] + HITER_FULL + link_text[end:]
    link_text = link_text.replace(old_decl, "func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)")
    umap_text = umap.read_text()
    old_call = "\t\thiter:      mapiterinit(type2.rtype, *(*unsafe.Pointer)(obj)),\n"
    if old_call not in umap_text:
        raise BuildError(f"reflect2 iterator not recognised in {umap}")
    umap_text = umap_text.replace(old_call, "\t\thiter:      &it,\n")
    umap_text = umap_text.replace(
        "\treturn &UnsafeMapIterator{\n\t\thiter:      &it,",
        "\tvar it hiter\n\tmapiterinit(type2.rtype, *(*unsafe.Pointer)(obj), &it)\n"
        "\treturn &UnsafeMapIterator{\n\t\thiter:      &it,",
    )
    # both files are checked before either is written: a half-patched tree would look "already patched" next time
    link.write_text(link_text)
    umap.write_text(umap_text)
    return True


OPENAPI_TYPE_VALIDATORS = (
    "vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go",
    "vendor/github.com/go-openapi/validate/type.go",
)
_ZERO_CHECK = "if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {"


def patch_openapi_zero_check(source: pathlib.Path) -> bool:
    """Make the CRD schema validators treat only JSON null as null.

    The vendored validators compare ``reflect.Value`` structs of the data and of its type's zero value. Since Go 1.19
    both point at the runtime's shared zero buffer for an empty string, so ``""`` was rejected as ``null`` by every CRD
    with a string field (a condition with an empty message could not be written). Decoded JSON is ``nil`` exactly for
    null, which is what the check meant. Returns whether anything was changed.
    """
    changed = False
    for relative in OPENAPI_TYPE_VALIDATORS:
        path = source / relative
        text = path.read_text()
        if _ZERO_CHECK in text:
            path.write_text(text.replace(_ZERO_CHECK, "if data == nil {"))
            changed = True
        elif "if data == nil {" not in text:
            raise BuildError(f"openapi type validator not recognised in {path}")
    return changed


OOM_SCORE_ADJUSTMENTS = (
    ("pkg/kubelet/dockershim/docker_sandbox.go", "defaultSandboxOOMAdj int = -998", "defaultSandboxOOMAdj int = 0"),
    ("pkg/kubelet/qos/policy.go", "guaranteedOOMScoreAdj int = -997", "guaranteedOOMScoreAdj int = 0"),
)


def patch_oom_score_adj(source: pathlib.Path) -> bool:
    """Keep the kubelet from asking for a negative ``oom_score_adj`` (pause sandboxes, guaranteed Pods).

    Kubernetes 1.20 hard-codes -998 for the pause container and -997 for guaranteed Pods. Lowering ``oom_score_adj``
    below 0 needs ``CAP_SYS_RESOURCE`` in the initial user namespace, which sandboxed and rootless machines refuse even
    to root: every Pod would fail to start. A local test node has no memory pressure to protect anything from, so both
    become 0. Returns whether anything was changed.
    """
    changed = False
    for relative, old, new in OOM_SCORE_ADJUSTMENTS:
        path = source / relative
        text = path.read_text()
        if old in text:
            path.write_text(text.replace(old, new))
            changed = True
        elif new not in text:
            raise BuildError(f"oom score adjustment not recognised in {path}")
    return changed


OWNER_REFERENCE_ADMISSION = "plugin/pkg/admission/gc/gc_admission.go"
_OWNER_LOOKUP = (
    "\tmappings, err := a.restMapper.RESTMappings("
    "schema.GroupKind{Group: groupVersion.Group, Kind: ref.Kind}, groupVersion.Version)\n"
    "\tif err != nil {\n"
)
_OWNER_LOOKUP_AGAIN = """\tgroupKind := schema.GroupKind{Group: groupVersion.Group, Kind: ref.Kind}
\tmappings, err := a.restMapper.RESTMappings(groupKind, groupVersion.Version)
\tif resettable, ok := a.restMapper.(interface{ Reset() }); ok && meta.IsNoMatchError(err) {
\t\t// okt: a kind created since the last periodic reset is looked up in discovery again at once.
\t\tresettable.Reset()
\t\tmappings, err = a.restMapper.RESTMappings(groupKind, groupVersion.Version)
\t}
\tif err != nil {
"""


def patch_owner_reference_admission(source: pathlib.Path) -> bool:
    """Make the API server's owner-reference admission look a kind it does not know up in discovery again.

    ``OwnerReferencesPermissionEnforcement`` maps the owner of every ``blockOwnerDeletion`` reference through a REST
    mapper that the API server resets only every 30 seconds: for up to 30 s after a CRD is created, a child with a
    controller reference to one of its custom resources is refused with 403, whoever writes it. A test harness that
    creates a CRD per test module waited that long for each. Now a kind the mapper does not know resets it and is
    looked up once more (a reference to a kind that does not exist costs one discovery read per request). Returns
    whether anything was changed.
    """
    path = source / OWNER_REFERENCE_ADMISSION
    text = path.read_text()
    if _OWNER_LOOKUP_AGAIN in text:
        return False
    if _OWNER_LOOKUP not in text:
        raise BuildError(f"owner reference admission not recognised in {path}")
    path.write_text(text.replace(_OWNER_LOOKUP, _OWNER_LOOKUP_AGAIN))
    return True


def _compile(source: pathlib.Path, log: pathlib.Path) -> pathlib.Path:
    gopath = source / ".go"
    link = gopath / "src" / "k8s.io" / "kubernetes"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(source)
    env = {
        **os.environ,
        "GOPATH": str(gopath),
        "GO111MODULE": "off",
        "CGO_ENABLED": "0",
        "GOCACHE": str(source.parent / "gocache"),
    }
    _run(["make", f"WHAT={' '.join('cmd/' + b for b in GO_BINARIES)}"], log, cwd=link, env=env)
    output = source / "_output" / "local" / "bin" / "linux" / "amd64"
    if not all(os.access(output / name, os.X_OK) for name in GO_BINARIES):
        output = source / "_output" / "bin"
    return output


def _compile_pause(source: pathlib.Path, built: pathlib.Path, log: pathlib.Path) -> None:
    """The sandbox binary of ``build/pause``, compiled as its Makefile does (static, ``-Os -Wall -Werror``)."""
    flags = ["-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{KUBE_VERSION}-okt{BUILD_REVISION}"]
    target = built / images.PAUSE_BINARY
    _run(["gcc", *flags, "-o", str(target), str(source / "build" / "pause" / "linux" / "pause.c")], log)


def import_images(assets: pathlib.Path, say: Callable[[str], None]) -> None:
    """Import the node's images into the local Docker, or say why not (a node imports them when it starts)."""
    reason = images.docker_unavailable()
    if reason is not None:
        say(f"okt envtest build: images not imported ({reason}); a node imports them when it starts")
        return
    started = time.monotonic()
    imported = images.ensure(assets, revision(), out=lambda line: say(f"okt envtest build: {line}"))
    names = ", ".join(image.name for image in images.all_images(assets))
    if imported:
        say(f"okt envtest build: images imported in {time.monotonic() - started:.1f}s ({names})")
    else:
        say(f"okt envtest build: images already in Docker ({names})")


def _publish(built: pathlib.Path, target: pathlib.Path) -> None:
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in BINARIES + NODE_BINARIES:
        shutil.copy2(built / name, staging / name)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def build(out: Callable[[str], None] | None = None, keep_sources: bool = False) -> pathlib.Path:
    """Build (once per machine) and return the directory holding the control-plane and node binaries.

    Concurrent callers (several test sessions at once) serialise on a lock file: one builds, the others wait and
    reuse its result. The node's images are imported separately (:func:`import_images`), as Docker may be down.
    """
    say = out or (lambda line: print(line, file=sys.stderr, flush=True))
    target = cached_assets()
    if has_binaries(target, node=True):
        return target
    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / "build.lock").open("w") as lock:
        if not _try_lock(lock):
            say("okt envtest build: another process is building the control plane; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if has_binaries(target, node=True):
            return target
        return _build_locked(say, target, keep_sources)


def _try_lock(lock: IO[str]) -> bool:
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _build_locked(say: Callable[[str], None], target: pathlib.Path, keep_sources: bool) -> pathlib.Path:
    work = cache_root() / "build"
    work.mkdir(parents=True, exist_ok=True)
    log = cache_root() / "build.log"
    say(f"okt envtest build: building Kubernetes {KUBE_VERSION} once for this machine (log: {log})")
    state: dict[str, pathlib.Path] = {}
    steps: list[tuple[str, Callable[[], object]]] = [
        ("enable deb-src", lambda: _enable_deb_src(log)),
        ("install " + " ".join(BUILD_PACKAGES), lambda: _install_packages(log)),
        ("download the kubernetes source package", lambda: _download_source(work, log)),
        ("extract the source", lambda: state.__setitem__("src", _extract_source(work, log))),
        ("patch vendored reflect2 for Go >= 1.18", lambda: patch_reflect2(state["src"])),
        ("patch vendored openapi validators for Go >= 1.19", lambda: patch_openapi_zero_check(state["src"])),
        ("patch the kubelet's oom_score_adj to 0", lambda: patch_oom_score_adj(state["src"])),
        (
            "patch the owner-reference admission to look new kinds up",
            lambda: patch_owner_reference_admission(state["src"]),
        ),
        (
            "compile " + ", ".join(GO_BINARIES) + " (about 15 minutes on 2 cores)",
            lambda: state.__setitem__("bin", _compile(state["src"], log)),
        ),
        ("compile pause (build/pause, static C)", lambda: _compile_pause(state["src"], state["bin"], log)),
        (f"install binaries into {target}", lambda: _publish(state["bin"], target)),
    ]
    with _Progress(say) as progress:
        for index, (label, action) in enumerate(steps, start=1):
            progress.step(f"[{index}/{len(steps)}] {label}")
            try:
                action()
            except (OSError, subprocess.CalledProcessError, BuildError, KeyError, ValueError) as exc:
                raise BuildError(f"step {index}/{len(steps)} '{label}' failed: {exc} (log: {log})") from exc
        progress.step("done")
    if not keep_sources:
        shutil.rmtree(work, ignore_errors=True)
    return target


if __name__ == "__main__":  # pragma: no cover - manual entry point
    try:
        print(build())
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
