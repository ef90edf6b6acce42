"""An operator's container image made from this machine's Python, for Pods on the local node (``docker import``).

Why this exists: a test that installs an operator the way users do (``kubectl apply -k`` of ``okt gen deploy``'s tree)
needs the operator's image, and the machines okt is tested on reach no image registry. Like the node's other images
(:mod:`okt.testing.images`), this one is a root filesystem packed into a tar stream: the running interpreter (its
binary, ``libpython`` and the standard library, at the same paths as here), the shared libraries they and every
extension module load (found with ``ldd``), okt's own package as imported by this process, the installed
distributions okt depends on (copied from this interpreter's site-packages: no network, the versions the tests ran
with), and the operator's files (``app``, e.g. ``{"app/main.py": ...}``). Its entry point is ``python -m okt run``, so
the generated Deployment's arguments (``/app/main.py --all-namespaces ...``) run as they would in a real image.

Guarantees: the image carries a label with the digest of everything in it; :func:`ensure` imports it only when no
image of that name holds that digest, so a second test session (or an unchanged checkout) reuses Docker's copy, and a
change to okt's sources or the operator's files makes a new one. Files are world-readable: the generated Deployment
runs as an unprivileged user on a read-only root filesystem (``PYTHONDONTWRITEBYTECODE``: nothing is written).

Caveats: the interpreter must be a CPython on Linux whose standard library is on this machine (a virtualenv's base
is used); extension modules come as installed here, so the image runs on this machine's architecture only.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Callable, Iterable, Mapping

from okt.testing import images

SITE_PACKAGES = "opt/okt/site-packages"
"""Where okt and its dependencies go inside the image (``PYTHONPATH``)."""
_SKIPPED_STDLIB = frozenset(
    {"site-packages", "test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__"}
)
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def operator_image(name: str, app: Mapping[str, pathlib.Path], *, package: str = "okt") -> images.Image:
    """The image ``name`` running ``python -m okt run`` with ``app``'s files (image path -> file or folder here).

    Raises:
        ImageError: an ``app`` path that does not exist, or an interpreter without a standard library on disk.
    """
    interpreter = pathlib.Path(sys.executable).resolve()
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"]).resolve()
    if not (stdlib / "os.py").is_file():
        raise images.ImageError(f"{name}: no standard library at {stdlib}")
    files: dict[str, pathlib.Path] = {str(interpreter).lstrip("/"): interpreter}
    files.update(_tree(stdlib.relative_to("/"), stdlib, skip=_SKIPPED_STDLIB))
    module = importlib.import_module(package)
    package_dir = pathlib.Path(module.__file__ or "").parent
    files.update(_tree(pathlib.PurePosixPath(SITE_PACKAGES, package), package_dir, skip=frozenset({"__pycache__"})))
    for distribution in dependencies(package):
        files.update(_distribution_files(distribution))
    for target, source in app.items():
        if not source.exists():
            raise images.ImageError(f"{name}: {source} does not exist")
        if source.is_dir():
            files.update(_tree(pathlib.PurePosixPath(target.lstrip("/")), source, skip=frozenset({"__pycache__"})))
        else:
            files[target.lstrip("/")] = source
    binaries = [interpreter, *(source for source in files.values() if ".so" in source.name)]
    copied = set(files.values())  # libraries shipped inside a distribution (``cffi.libs``) are already in
    for library in sorted({lib for binary in binaries for lib in _linked(binary)}):
        if library.resolve() not in copied:
            files.setdefault(str(library).lstrip("/"), library.resolve())
    site = pathlib.PurePosixPath("/", SITE_PACKAGES)
    return images.Image(
        name,
        files=tuple(sorted(files.items())),
        texts=(
            ("etc/passwd", "root:x:0:0:root:/tmp:/nonexistent\nnonroot:x:65532:65532:nonroot:/tmp:/nonexistent\n"),
            ("etc/group", "root:x:0:\nnonroot:x:65532:\n"),
        ),
        changes=(
            f"ENV PYTHONPATH={site}",
            "ENV PYTHONDONTWRITEBYTECODE=1",
            "ENV PYTHONUNBUFFERED=1",
            f"ENV PATH={interpreter.parent}:/usr/bin:/bin",
            "WORKDIR /app",
            f'ENTRYPOINT ["{interpreter}", "-m", "{package}", "run"]',
        ),
    )


def dependencies(package: str = "okt") -> list[importlib.metadata.Distribution]:
    """The installed distributions ``package`` needs, recursively (extras left out), ``package``'s own excluded.

    ``package``'s requirements are read from the ``pyproject.toml`` of the checkout it is imported from, when it is
    (an editable install's metadata is as old as the install), else from its installed metadata. A requirement
    whose distribution is not installed is one whose environment marker excludes it here (another Python or
    platform): the interpreter that runs the image is this one, so it is not needed.
    """
    found: dict[str, importlib.metadata.Distribution] = {}
    module = importlib.import_module(package)
    declared = _declared(pathlib.Path(module.__file__ or "").parent, package)
    top = declared if declared is not None else importlib.metadata.distribution(package).requires or ()
    pending = list(_names(top))
    while pending:
        requirement = pending.pop()
        key = re.sub(r"[-_.]+", "-", requirement).lower()
        if key in found:
            continue
        try:
            distribution = importlib.metadata.distribution(requirement)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[key] = distribution
        pending.extend(_names(distribution.requires or ()))
    return [found[key] for key in sorted(found)]


def digest(image: images.Image) -> str:
    """A digest of everything in ``image`` (paths, contents, modes, links, texts, settings): its cache key."""
    hasher = hashlib.sha256()
    for target, source in image.files:
        hasher.update(f"{target}\0{source.stat().st_mode & 0o7777}\0".encode())
        hasher.update(source.read_bytes())
    for entry in (*image.links, *image.texts):
        hasher.update("\0".join(entry).encode())
    hasher.update("\0".join(image.changes).encode())
    return hasher.hexdigest()[:20]


def ensure(
    image: images.Image, *, docker: str | None = None, out: Callable[[str], None] | None = None
) -> tuple[str, bool]:
    """Import ``image`` into the local Docker unless an image of its name already holds its digest.

    Returns the image's name and whether it was imported now.

    Raises:
        ImageError: no docker command, or ``docker import`` failed.
    """
    binary = docker or images.docker_binary()
    if binary is None:
        raise images.ImageError("no docker command on the PATH: install Debian's docker.io package")
    key = digest(image)
    found = images.present(binary, image.name)
    if found is not None and found.label == key:
        return image.name, False
    if out is not None:
        out(f"importing {image.name} ({len(image.files)} files) into the local Docker")
    changes = [arg for change in (*image.changes, f"LABEL {images.LABEL}={key}") for arg in ("--change", change)]
    completed = subprocess.run(
        [binary, "import", *changes, "-", image.name], input=image.tar(), capture_output=True, check=False
    )
    if completed.returncode != 0:
        raise images.ImageError(
            f"docker import {image.name} failed: {completed.stderr.decode(errors='replace').strip()}"
        )
    if found is not None:
        subprocess.run([binary, "image", "rm", found.id], capture_output=True, check=False)
    return image.name, True


def _declared(package_dir: pathlib.Path, package: str) -> list[str] | None:
    """The dependencies of the checkout ``package_dir`` lives in (its ``pyproject.toml``), or None outside one."""
    try:
        project = tomllib.loads((package_dir.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
    return list(project.get("dependencies", ())) if project.get("name") == package else None


def _names(requirements: Iterable[str]) -> Iterable[str]:
    """The distribution names of ``requirements``, those of extras left out."""
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        if "extra" in marker:
            continue
        match = _REQUIREMENT_NAME.match(name)
        if match:
            yield match.group(1)


def _distribution_files(distribution: importlib.metadata.Distribution) -> dict[str, pathlib.Path]:
    """The files a distribution installed into its site-packages (not its scripts), placed under the image's."""
    root = pathlib.Path(str(distribution.locate_file(""))).resolve()
    files: dict[str, pathlib.Path] = {}
    for entry in distribution.files or ():
        source = pathlib.Path(str(distribution.locate_file(entry))).resolve()
        if "__pycache__" in entry.parts or not source.is_file() or not source.is_relative_to(root):
            continue
        files[str(pathlib.PurePosixPath(SITE_PACKAGES, *entry.parts))] = source
    return files


def _tree(target: pathlib.PurePath, source: pathlib.Path, *, skip: frozenset[str]) -> dict[str, pathlib.Path]:
    """Every file under ``source`` (links followed), placed under ``target``; folders named in ``skip`` left out."""
    files: dict[str, pathlib.Path] = {}
    for directory, folders, names in os.walk(source, followlinks=True):
        folders[:] = [folder for folder in folders if folder not in skip and not folder.startswith("config-")]
        relative = pathlib.Path(directory).relative_to(source)
        for file_name in names:
            path = pathlib.Path(directory, file_name)
            if path.is_file() and not file_name.endswith(".pyc") and not file_name.startswith("_tkinter"):
                files[str(pathlib.PurePosixPath(target, *relative.parts, file_name))] = path.resolve()
    return files


def _linked(binary: pathlib.Path) -> list[pathlib.Path]:
    """The shared libraries ``binary`` loads as ``ldd`` resolves them (none for a static or non-ELF file)."""
    listed = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        return []
    return [pathlib.Path(match.group(1)) for match in map(images.LDD_LINE.search, listed.stdout.splitlines()) if match]
