"""Every ``ctx.<name>`` the README and the pages write is something a hook's context has.

Hooks get an ``okt.Context`` (a daemon an ``okt.DaemonContext``, a watch's mapping function an ``okt.MapContext``);
``ctx.conditions``, ``ctx.results`` and ``ctx.cr`` are an ``okt.Conditions``, a ``Results`` and an
``okt.CustomResource``. A name the text gives and the object lacks is an ``AttributeError`` in the reader's operator.
"""

from __future__ import annotations

import inspect
import pathlib
import re

import pytest

import okt
from okt.engines import results

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_USE = re.compile(r"\bctx\.([a-zA-Z_]\w*)(?:\.([a-zA-Z_]\w*))?")


def _names(*classes: type) -> frozenset[str]:
    """The attributes of instances of ``classes``: the class's own, and those their methods assign to ``self``."""
    found: set[str] = set()
    for cls in classes:
        found |= set(dir(cls)) | set(getattr(cls, "__annotations__", {}))
        found |= set(re.findall(r"self\.([a-zA-Z_]\w*)\s*(?::[^=\n]*)?=(?!=)", inspect.getsource(cls)))
    return frozenset(found)


CONTEXTS = _names(okt.Context, okt.DaemonContext, okt.MapContext)
MEMBERS = {
    "conditions": _names(okt.Conditions),
    "results": _names(results.Results),
    "cr": _names(okt.CustomResource),
}

USES = [
    (f"{source.relative_to(ROOT)}:{number}", match.group(0))
    for source in SOURCES
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
    for match in _USE.finditer(line)
]


def test_the_pages_use_the_context() -> None:
    assert any(use.startswith("ctx.conditions.") for _, use in USES)


@pytest.mark.parametrize(("where", "use"), USES, ids=[f"{where} {use}" for where, use in USES])
def test_each_context_name_the_pages_write_exists(where: str, use: str) -> None:
    _, name, *member = use.split(".")
    missing = [use] if name not in CONTEXTS else []
    if member and name in MEMBERS and member[0] not in MEMBERS[name]:
        missing.append(use)

    assert (where, missing) == (where, [])
