"""Where the README and the pages say the control plane's build is cached is where ``okt.testing.build`` caches it.

A reader who points ``OKT_ENVTEST_ASSETS`` at the folder a page names, or clears it to force a rebuild, acts on the
folder the text gives.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from okt.testing import build

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_NAMED = re.compile(r"(?:okt/envtest|<cache>)/(\d+\.\d+\.\d+[\w.-]*?)(?=[`)\s]|$)")
"""A build folder under the cache, as the text writes it: ``~/.cache/okt/envtest/NAME`` or ``<cache>/NAME``."""

NAMED = [
    (f"{source.relative_to(ROOT)}:{number}", name)
    for source in SOURCES
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
    for name in _NAMED.findall(line)
]


def test_the_readme_names_the_cache_folder() -> None:
    assert any(where.startswith("README.md") for where, _ in NAMED)


@pytest.mark.parametrize(("where", "name"), NAMED, ids=[where for where, _ in NAMED])
def test_each_cache_folder_named_is_the_one_the_build_uses(where: str, name: str) -> None:
    assert (where, name) == (where, build.revision())
