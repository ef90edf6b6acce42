"""Diagrams drawn in the reader's browser from a copy of mermaid shipped inside the site, never from a CDN.

Why this exists: the theme draws every ```` ```mermaid ```` fence with the mermaid library, and loads it from unpkg.com
unless a ``mermaid`` global is already defined. Offline (or behind a proxy) that load fails and the page shows the
diagram's source text. This hook puts one pinned release of mermaid into the site and loads it, before the theme's
script, on the pages that have a diagram (and only those: the library weighs 3.5 MB).

Where the copy comes from: the npm registry, through ``npm pack`` (so npm's configured registry or mirror applies),
once per machine. The tarball must match the integrity pinned below (the registry's own ``dist.integrity``); only
``dist/mermaid.min.js`` and the licence are kept, in ``$OKT_DOCS_CACHE`` (default ``~/.cache/okt/docs``), outside
the checkout. A build without npm and without the cached copy stops with one error saying how to provide it.

Changing the version: set :data:`VERSION` and :data:`INTEGRITY` from ``npm view mermaid@<version> dist.integrity``.
The theme calls ``mermaid.initialize`` and ``mermaid.render`` (mermaid 10 and 11 keep that API).
"""

from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import shutil
import subprocess
import tarfile
import tempfile

from mkdocs import exceptions, utils
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

VERSION = "11.17.2"
INTEGRITY = "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="

#: Where the library is served from, inside the built site.
SITE_PATH = "assets/javascripts/mermaid.min.js"
LICENSE_PATH = "assets/javascripts/mermaid.LICENSE.txt"

#: What the theme renders a mermaid fence as (pymdownx.superfences' ``fence_code_format`` with class ``mermaid``).
DIAGRAM_MARKER = '<pre class="mermaid">'

_KEPT = {"package/dist/mermaid.min.js": "mermaid.min.js", "package/LICENSE": "LICENSE"}


def cache_dir() -> pathlib.Path:
    """The folder holding this version's copy (``OKT_DOCS_CACHE`` overrides the base, like ``OKT_ENVTEST_CACHE``)."""
    configured = os.environ.get("OKT_DOCS_CACHE")
    if configured:
        base = pathlib.Path(configured).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache") / "okt" / "docs"
    return base / f"mermaid-{VERSION}"


def matches_integrity(data: bytes, integrity: str) -> bool:
    """Whether ``data`` has the digest of an npm ``integrity`` string (``sha512-<base64>``)."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm not in {"sha256", "sha384", "sha512"} or not expected:
        return False
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected


def extract(tarball: bytes, target: pathlib.Path, integrity: str = INTEGRITY) -> pathlib.Path:
    """Check ``tarball`` against ``integrity`` and keep the library and its licence in ``target``.

    Files are written under temporary names and renamed last, so an interrupted run never leaves a partial copy that
    a later build would take for a good one. Returns the path of ``mermaid.min.js``.

    Raises:
        mkdocs.exceptions.PluginError: the digest differs, or the tarball lacks the library.
    """
    if not matches_integrity(tarball, integrity):
        raise exceptions.PluginError(f"mermaid {VERSION}: the downloaded tarball does not match {integrity[:20]}...")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as scratch:
        archive = pathlib.Path(scratch) / "package.tgz"
        archive.write_bytes(tarball)
        with tarfile.open(archive) as tar:
            found = {member.name: member for member in tar.getmembers() if member.name in _KEPT and member.isfile()}
            if "package/dist/mermaid.min.js" not in found:
                raise exceptions.PluginError(f"mermaid {VERSION}: the tarball has no dist/mermaid.min.js")
            for name, member in found.items():
                source = tar.extractfile(member)
                assert source is not None  # a regular file always has content
                (pathlib.Path(scratch) / _KEPT[name]).write_bytes(source.read())
        for name in sorted(found, key=lambda n: n.endswith(".js")):  # the library last: its presence means complete
            os.replace(pathlib.Path(scratch) / _KEPT[name], target / _KEPT[name])
    return target / "mermaid.min.js"


def fetch(target: pathlib.Path) -> pathlib.Path:
    """Download the pinned release with ``npm pack`` and keep it in ``target``; returns the library's path."""
    npm = shutil.which("npm")
    if npm is None:
        raise exceptions.PluginError(
            f"mermaid {VERSION} is not cached at {target} and npm is not installed to fetch it: install npm "
            f"(Debian: apt-get install npm), or put mermaid@{VERSION}'s dist/mermaid.min.js there"
        )
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(  # noqa: S603 (fixed arguments; the version is pinned above)
            [npm, "pack", f"mermaid@{VERSION}", "--pack-destination", scratch, "--silent"],
            cwd=scratch,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        tarballs = list(pathlib.Path(scratch).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            raise exceptions.PluginError(
                f"npm pack mermaid@{VERSION} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"
            )
        return extract(tarballs[0].read_bytes(), target)


def library() -> pathlib.Path:
    """The cached library, fetched first if this machine has no copy yet."""
    cached = cache_dir() / "mermaid.min.js"
    return cached if cached.is_file() else fetch(cache_dir())


def with_script(html: str, script_url: str) -> str:
    """``html`` loading the library before the theme's scripts when it has a diagram; unchanged otherwise.

    Before the theme's bundle, because the theme looks for a ``mermaid`` global once and fetches from unpkg.com when it
    finds none.
    """
    if DIAGRAM_MARKER not in html:
        return html
    tag = f'<script src="{script_url}"></script>\n'
    anchor = html.find('<script src="', html.find(DIAGRAM_MARKER))
    at = anchor if anchor != -1 else html.rindex("</body>")
    return html[:at] + tag + html[at:]


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    path = library()
    files.append(File.generated(config, SITE_PATH, abs_src_path=str(path)))
    if (path.parent / "LICENSE").is_file():  # mermaid's MIT licence travels with the copy
        files.append(File.generated(config, LICENSE_PATH, abs_src_path=str(path.parent / "LICENSE")))
    return files


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    return with_script(output, utils.get_relative_url(SITE_PATH, page.url))
