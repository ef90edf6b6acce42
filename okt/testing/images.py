"""Container images for the local node, made from this machine's Debian packages with ``docker import``.

Why this exists: the local node (:mod:`okt.testing.node`) runs Pods on the machine's Docker, and no registry can be
reached from the machines okt is tested on. Every image a test or the memcached sample needs is therefore made here,
as a root filesystem packed into a tar stream and given to ``docker import``:

* ``k8s.gcr.io/pause:3.2`` — the sandbox image Kubernetes 1.20's kubelet expects, holding the static ``pause`` binary
  built from Kubernetes' own ``build/pause`` source (:mod:`okt.testing.build` compiles it);
* ``busybox:1.35`` — Debian's ``busybox-static`` with a link per applet (``sh``, ``wget``, ``nc``, ...);
* ``memcached:1.6`` — Debian's ``memcached`` with the shared libraries it links (found with ``ldd``), running as the
  ``memcache`` user (uid 11211), as the sample's Deployment asks.

Guarantees: the tar streams are deterministic (fixed owners and times), so importing twice gives the same layer; every
file is readable, and every program runnable, by every user, whatever its mode here; an image already present with
this build's label is not imported again; image names carry explicit tags, so Pods that use them with
``imagePullPolicy: IfNotPresent`` (or ``Never``) never try a registry.

Caveats: images are made from the packages installed on this machine (``busybox-static``, ``memcached``); a missing
package is reported by name.
"""

from __future__ import annotations

import dataclasses
import io
import json
import pathlib
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence

PAUSE = "k8s.gcr.io/pause:3.2"
BUSYBOX = "busybox:1.35"
MEMCACHED = "memcached:1.6"
LABEL = "io.okt.envtest"
PAUSE_BINARY = "pause"
"""The file name of the compiled pause binary beside the control-plane binaries."""
MEMCACHED_UID = 11211
BUSYBOX_PATH = pathlib.Path("/bin/busybox")
MEMCACHED_PATH = pathlib.Path("/usr/bin/memcached")
LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")


class ImageError(RuntimeError):
    """An image could not be made or imported; the message names the image and why."""


@dataclasses.dataclass(frozen=True)
class Image:
    """One local image: its name (with tag), the files of its root filesystem and its Dockerfile-like settings."""

    name: str
    files: tuple[tuple[str, pathlib.Path], ...]
    """(path inside the image, file on this machine) pairs; symlinks on this machine are copied as their target."""
    links: tuple[tuple[str, str], ...] = ()
    """(path inside the image, link target) symlinks."""
    texts: tuple[tuple[str, str], ...] = ()
    """(path inside the image, content) small text files."""
    changes: tuple[str, ...] = ()
    """``docker import --change`` instructions (ENTRYPOINT, CMD, USER, ...)."""

    def tar(self) -> bytes:
        """The root filesystem as a deterministic tar stream."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for directory in ("tmp", "etc", "proc", "sys", "dev"):
                info = tarfile.TarInfo(directory)
                info.type = tarfile.DIRTYPE
                info.mode = 0o1777 if directory == "tmp" else 0o755
                archive.addfile(info)
            for name, content in sorted(self.texts):
                data = content.encode()
                info = tarfile.TarInfo(name.lstrip("/"))
                info.size = len(data)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(data))
            for name, source in sorted(self.files):
                data = source.read_bytes()
                info = tarfile.TarInfo(name.lstrip("/"))
                info.size = len(data)
                info.mode = _shared_mode(source.stat().st_mode)
                archive.addfile(info, io.BytesIO(data))
            for name, target in sorted(self.links):
                info = tarfile.TarInfo(name.lstrip("/"))
                info.type = tarfile.SYMTYPE
                info.linkname = target
                archive.addfile(info)
        return buffer.getvalue()


def _shared_mode(mode: int) -> int:
    """``mode`` readable by everyone, and runnable by everyone when anyone may run it: the containers run as
    unprivileged users (65532, ``memcache``) who own nothing in the image, whatever the umask that made the file
    here."""
    mode &= 0o7777
    return mode | 0o444 | (0o111 if mode & 0o111 else 0)


def _etc(users: Sequence[tuple[str, int]]) -> tuple[tuple[str, str], ...]:
    passwd = "".join(f"{name}:x:{uid}:{uid}:{name}:/tmp:/bin/sh\n" for name, uid in users)
    group = "".join(f"{name}:x:{uid}:\n" for name, uid in users)
    return (("etc/passwd", passwd), ("etc/group", group))


def pause_image(binary: pathlib.Path) -> Image:
    return Image(PAUSE, files=(("pause", binary),), changes=('ENTRYPOINT ["/pause"]',))


def busybox_image(busybox: pathlib.Path = BUSYBOX_PATH) -> Image:
    _require(busybox, "busybox-static")
    listed = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True, check=True).stdout
    applets = sorted({line.strip() for line in listed.splitlines() if line.strip()} - {"bin/busybox"})
    return Image(
        BUSYBOX,
        files=(("bin/busybox", busybox),),
        links=tuple((applet, "/bin/busybox") for applet in applets),
        texts=_etc((("root", 0), ("nobody", 65534))),
        changes=('CMD ["sh"]',),
    )


def shared_libraries(binary: pathlib.Path) -> list[pathlib.Path]:
    """The shared libraries ``binary`` loads (and its dynamic loader), as ``ldd`` resolves them on this machine."""
    listed = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    return [pathlib.Path(match.group(1)) for match in map(LDD_LINE.search, listed.splitlines()) if match]


def memcached_image(memcached: pathlib.Path = MEMCACHED_PATH) -> Image:
    _require(memcached, "memcached")
    libraries = shared_libraries(memcached)
    return Image(
        MEMCACHED,
        files=(("usr/bin/memcached", memcached), *((str(lib), lib.resolve()) for lib in libraries)),
        texts=_etc((("root", 0), ("memcache", MEMCACHED_UID))),
        changes=(f"USER {MEMCACHED_UID}", 'ENTRYPOINT ["/usr/bin/memcached"]', "EXPOSE 11211"),
    )


def _require(path: pathlib.Path, package: str) -> None:
    if not path.is_file():
        raise ImageError(f"{path} is missing: install Debian's {package} package")


def all_images(assets: pathlib.Path) -> list[Image]:
    """The images a node needs, the pause binary taken from ``assets`` (where the build put it)."""
    return [pause_image(assets / PAUSE_BINARY), busybox_image(), memcached_image()]


def docker_binary() -> str | None:
    return shutil.which("docker")


@dataclasses.dataclass(frozen=True)
class Present:
    """A local image of that name: its id and okt's build label ("" for an image okt did not make)."""

    id: str
    label: str


def present(docker: str, name: str) -> Present | None:
    """The local image ``name``, or None when there is none."""
    inspected = subprocess.run(
        [docker, "image", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if inspected.returncode != 0:
        return None
    image_id, _, labels_json = inspected.stdout.strip().partition(" ")
    labels = json.loads(labels_json or "null") or {}
    return Present(id=image_id, label=str(labels.get(LABEL) or ""))


def ensure(
    assets: pathlib.Path, revision: str, out: Callable[[str], None] | None = None, docker: str | None = None
) -> list[str]:
    """Import every image that is missing (or from another okt build) into the local Docker; returns those imported.

    An image of the same name that okt did not make (pulled from a registry earlier) is left alone and used: it is
    the real thing. An image from an older okt build is replaced, and the old one removed.
    """
    binary = docker or docker_binary()
    if binary is None:
        raise ImageError("no docker command on the PATH: install Debian's docker.io package")
    imported: list[str] = []
    for image in all_images(assets):
        found = present(binary, image.name)
        if found is not None and found.label in ("", revision):
            continue
        if out is not None:
            out(f"importing {image.name} into the local Docker")
        changes = [arg for change in (*image.changes, f"LABEL {LABEL}={revision}") for arg in ("--change", change)]
        completed = subprocess.run(
            [binary, "import", *changes, "-", image.name], input=image.tar(), capture_output=True, check=False
        )
        if completed.returncode != 0:
            raise ImageError(f"docker import {image.name} failed: {completed.stderr.decode(errors='replace').strip()}")
        imported.append(image.name)
        if found is not None:
            subprocess.run([binary, "image", "rm", found.id], capture_output=True, check=False)
    return imported


def docker_unavailable(docker: str | None = None) -> str | None:
    """Why the local Docker cannot be used (one line), or None when its daemon answers."""
    binary = docker or docker_binary()
    if binary is None:
        return "no docker command on the PATH (Debian's docker.io package)"
    try:
        answered = subprocess.run(
            [binary, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=20, check=False
        )
    except subprocess.TimeoutExpired:
        return "the Docker daemon did not answer `docker info` within 20s"
    if answered.returncode != 0 or not answered.stdout.strip():
        detail = answered.stderr.strip().splitlines()[-1:] or ["no answer"]
        return f"the Docker daemon does not answer ({detail[0]})"
    return None
