"""The documentation site as a reader sees it: every page rendered in headless Chromium, served from loopback only.

``mkdocs build --strict`` checks the Markdown (links between pages, anchors it knows); it cannot see what the browser
does with the result: a diagram left as source text because its script came from a CDN, an asset the theme asks for
and the site lacks, a link written into a docstring, a public name missing from the API reference. This module builds
the site, serves it with the standard library on 127.0.0.1, opens every page once in one Chromium (names outside
loopback do not resolve, as for an offline reader) and then checks what the pages showed. Nearly all the time is the
build and the rendering (4 to 15 minutes on a 2-core machine at load 20 to 28). It skips, saying why, where no
Chromium is installed.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import os
import pathlib
import re
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import griffe
import pytest

import okt
import okt.testing
from tests.e2e import chromium

pytestmark = pytest.mark.timeout(1800)  # the first test's setup builds and renders the whole site (15 min at load 28)

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 600  # the first build on a machine also fetches mermaid through npm
DIAGRAM_TIMEOUT = 60.0
PAGE_TIMEOUT = 120.0  # generous: a loaded CI machine renders the API reference slowly

# What each page gives back, read in the page once its load has settled.
_READ_PAGE = """(() => ({
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id)
        .concat([...document.querySelectorAll('a[name]')].map(a => a.name)),
    images: [...document.querySelectorAll('img')].map(i => ({src: i.currentSrc || i.src, width: i.naturalWidth})),
    sections: Object.fromEntries([...document.querySelectorAll('.doc-object > .doc-heading[id]')].map(h => [
        h.id, (h.parentElement.querySelector(':scope > .doc-contents') || {innerText: ''}).innerText])),
}))()"""


@dataclasses.dataclass(frozen=True)
class Page:
    path: str
    """The page's path on the server, e.g. ``/concepts/stepper/``."""
    visit: chromium.Visit
    links: list[str]
    ids: set[str]
    images: list[dict[str, Any]]
    sections: dict[str, str]
    """Each API reference entry's text (mkdocstrings' ``.doc-contents``), by its anchor (``okt.Reconciler``)."""
    diagrams: list[str]
    """The text of each mermaid-drawn SVG in the page, shadow roots included."""


class _Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves the site and remembers the status of every request, workers' included (the browser misses those)."""

    served: list[tuple[str, int]]

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.served.append((self.path, int(code) if str(code).isdigit() else 0))

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    target = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(target)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stderr[-4000:]}"
    return target


@pytest.fixture(scope="module")
def server(site: pathlib.Path) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    served: list[tuple[str, int]] = []
    handler = type("Handler", (_Recorder,), {"served": served})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", served
    finally:
        httpd.shutdown()
        httpd.server_close()


def _page_paths(site: pathlib.Path) -> list[str]:
    paths = ["/" + str(p.parent.relative_to(site)).removeprefix(".") for p in site.rglob("index.html")]
    return [*sorted(path.rstrip("/") + "/" for path in paths), "/404.html"]


def _diagrams(browser: chromium.Browser) -> list[str]:
    texts = []
    for node in chromium.walk(browser.document()):
        flat = node.get("attributes", [])  # [name, value, name, value, ...]
        attributes = dict(zip(flat[::2], flat[1::2], strict=True))
        if node.get("nodeName") == "svg" and attributes.get("id", "").startswith("__mermaid"):  # the theme's ids
            words = (n.get("nodeValue", "") for n in chromium.walk(node) if n.get("nodeName") != "style")
            texts.append(" ".join(w for w in words if w.strip()))
    return texts


@pytest.fixture(scope="module")
def pages(site: pathlib.Path, server: tuple[str, list[tuple[str, int]]]) -> dict[str, Page]:
    executable = chromium.find()
    if executable is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium): the built site is not rendered")
    base, _ = server
    seen = {}
    with chromium.Browser(executable, timeout=PAGE_TIMEOUT) as browser:
        for path in _page_paths(site):
            visit = browser.open(base + path)
            diagrams: list[str] = []
            source = site / path.lstrip("/") / ("index.html" if path.endswith("/") else "")
            if '<pre class="mermaid">' in source.read_text():  # drawn after the load, by the theme's script
                deadline = time.monotonic() + DIAGRAM_TIMEOUT
                while not diagrams and time.monotonic() < deadline:
                    time.sleep(0.2)
                    diagrams = _diagrams(browser)
            read = browser.evaluate(_READ_PAGE)
            seen[path] = Page(path, visit, read["links"], set(read["ids"]), read["images"], read["sections"], diagrams)
    return seen


def test_every_page_loads_every_asset_from_the_site_itself(
    pages: dict[str, Page], server: tuple[str, list[tuple[str, int]]]
) -> None:
    base, served = server
    failed = {path: page.visit.failed for path, page in pages.items() if page.visit.failed}
    assert not failed, f"requests that failed (status >= 400, or no answer from off the machine): {failed}"
    outside = {
        path: [r.url for r in page.visit.requests if not r.url.startswith(base)]
        for path, page in pages.items()
        if any(not r.url.startswith(base) for r in page.visit.requests)
    }
    assert not outside, f"pages reaching outside the site: {outside}"
    assert not [entry for entry in served if entry[1] >= 400], "the server answered some requests with an error"
    errors = {path: page.visit.exceptions for path, page in pages.items() if page.visit.exceptions}
    assert not errors, f"uncaught script errors: {errors}"


def test_no_link_inside_the_site_is_broken(
    pages: dict[str, Page], site: pathlib.Path, server: tuple[str, list[tuple[str, int]]]
) -> None:
    base, _ = server
    broken = []
    for path, page in pages.items():
        for link in page.links:
            if not link.startswith(base):
                continue
            target = urllib.parse.urlsplit(link)
            file = site / urllib.parse.unquote(target.path).lstrip("/")
            if target.path.endswith("/"):
                file /= "index.html"
            if not file.is_file():
                broken.append(f"{path} -> {link} (no such file)")
            elif (
                target.fragment
                and target.path in pages
                and urllib.parse.unquote(target.fragment) not in pages[target.path].ids
            ):
                broken.append(f"{path} -> {link} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_every_image_is_drawn(pages: dict[str, Page]) -> None:
    blank = [f"{path}: {image['src']}" for path, page in pages.items() for image in page.images if not image["width"]]
    assert not blank, f"images that did not load: {blank}"


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("/concepts/stepper/", [state.name for state in okt.State]),
        ("/concepts/lifecycle/", []),
    ],
)
def test_mermaid_diagrams_are_drawn_as_pictures(pages: dict[str, Page], path: str, names: list[str]) -> None:
    page = pages[path]
    assert page.diagrams, f"{path}: no diagram drawn as an SVG (the mermaid source shows as text)"
    missing = [name for name in names if name not in page.diagrams[0].split()]
    assert not missing, f"{path}: the drawn diagram lacks the states {missing}"


def _docstrings(module: str, names: list[str]) -> dict[str, str]:
    """Each public name's docstring as the sources write it (griffe, as the reference itself reads them)."""
    loaded = griffe.load(module, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    found = {}
    for name in names:
        member = loaded[name]
        found[name] = member.docstring.value if member.docstring else ""
    return found


def _plain(text: str) -> str:
    """Text without Markdown's code and emphasis marks, links reduced to their label, whitespace collapsed."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.sub(r"[`*]", "", text).split())


@pytest.mark.parametrize(("module", "path"), [(okt, "/reference/okt/"), (okt.testing, "/reference/testing/")])
def test_api_reference_shows_every_public_name_with_its_docstring(
    pages: dict[str, Page], module: Any, path: str
) -> None:
    sections = pages[path].sections
    docstrings = _docstrings(module.__name__, list(module.__all__))
    undocumented = [name for name, doc in docstrings.items() if not doc.strip()]
    assert not undocumented, f"public names of {module.__name__} without a docstring: {undocumented}"
    missing = [name for name in module.__all__ if f"{module.__name__}.{name}" not in sections]
    assert not missing, f"{path} has no entry for {missing}"
    wrong = {}
    for name, doc in docstrings.items():
        summary = _plain(doc.strip().split("\n\n")[0])
        shown = _plain(sections[f"{module.__name__}.{name}"])
        if summary not in shown:
            wrong[name] = (summary, shown[:200])
    assert not wrong, f"{path}: entries not showing their docstring's summary: {wrong}"
