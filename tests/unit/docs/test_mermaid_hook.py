"""The site's mermaid hook: only a tarball with the pinned digest is kept, and only pages with a diagram load it."""

from __future__ import annotations

import base64
import hashlib
import io
import pathlib
import tarfile

import pytest
from mkdocs import exceptions

from docs.hooks import mermaid


def _tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_a_tarball_with_the_pinned_digest_leaves_the_library_and_its_licence(tmp_path: pathlib.Path) -> None:
    tarball = _tarball({"package/dist/mermaid.min.js": b"globalThis.mermaid={}", "package/LICENSE": b"MIT"})

    library = mermaid.extract(tarball, tmp_path / "cache", _integrity(tarball))

    assert library.read_bytes() == b"globalThis.mermaid={}"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["LICENSE", "mermaid.min.js"]


@pytest.mark.parametrize("integrity", ["sha512-" + base64.b64encode(b"x" * 64).decode(), "md5-abc", "", "sha512-"])
def test_a_tarball_with_another_digest_is_refused_and_nothing_is_kept(tmp_path: pathlib.Path, integrity: str) -> None:
    tarball = _tarball({"package/dist/mermaid.min.js": b"alert(1)"})

    with pytest.raises(exceptions.PluginError, match="does not match"):
        mermaid.extract(tarball, tmp_path / "cache", integrity)

    assert not (tmp_path / "cache" / "mermaid.min.js").exists()


def test_a_tarball_without_the_library_is_refused(tmp_path: pathlib.Path) -> None:
    tarball = _tarball({"package/README.md": b"no dist here"})

    with pytest.raises(exceptions.PluginError, match=r"no dist/mermaid\.min\.js"):
        mermaid.extract(tarball, tmp_path / "cache", _integrity(tarball))

    assert not (tmp_path / "cache" / "mermaid.min.js").exists()


def test_a_page_with_a_diagram_loads_the_library_before_the_theme_script() -> None:
    html = (
        '<html><body><pre class="mermaid"><code>stateDiagram-v2</code></pre>\n'
        '<script src="../assets/javascripts/bundle.js"></script></body></html>'
    )

    out = mermaid.with_script(html, "../assets/javascripts/mermaid.min.js")

    library = out.index('<script src="../assets/javascripts/mermaid.min.js"></script>')
    assert library < out.index('<script src="../assets/javascripts/bundle.js">')
    assert out.count("mermaid.min.js") == 1


def test_a_page_without_a_diagram_is_left_alone() -> None:
    html = '<html><body><pre><code>mermaid</code></pre><script src="bundle.js"></script></body></html>'

    assert mermaid.with_script(html, "assets/javascripts/mermaid.min.js") == html


def test_the_cache_follows_okt_docs_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("OKT_DOCS_CACHE", str(tmp_path))

    assert mermaid.cache_dir() == tmp_path / f"mermaid-{mermaid.VERSION}"
