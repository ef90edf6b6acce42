"""Every hook and setting a python block of the README, the pages or a sample's README declares on a subclass of an
okt class (``okt.Reconciler``, ``okt.MutableResource``, ``okt.SecretResource``...) is one that class has.

okt reads hooks and settings by name. Most of the pages' blocks are fragments that no test runs (a class with ``...``
in its body, a name left for the reader to define), so a hook renamed in okt and not in the text goes unnoticed: the
reader's copy of it is a method okt never calls (``okt.Reconciler`` refuses a name one typo away from a hook of its
own, not one renamed further). The blocks are parsed, not run: a class counts as okt's when one of its bases, or of
the bases of a class of the same block, is an okt class.
"""

from __future__ import annotations

import ast
import pathlib
import re
import textwrap

import pytest

import okt

ROOT = pathlib.Path(__file__).resolve().parents[3]
SOURCES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "samples").glob("*/README.md")),
]

_FENCE = re.compile(r"^(?P<indent>\s*)```python\s*$")

OKT_CLASSES: dict[str, type] = {
    name: value
    for name in okt.__all__
    if isinstance(value := getattr(okt, name), type) and issubclass(value, (okt.Reconciler, okt.Resource))
}
"""The classes of okt a reader's class may derive from, by the name a block gives them (``okt.X`` or ``X``)."""


def _blocks(source: pathlib.Path) -> list[tuple[int, str]]:
    """``(line of the opening fence, code)`` of each python block of ``source``."""
    lines = source.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        body = []
        start = index + 1
        index += 1
        while lines[index].strip() != "```":
            body.append(lines[index][len(fence["indent"]) :])
            index += 1
        found.append((start, textwrap.dedent("\n".join(body))))
        index += 1
    return found


def _parse(code: str) -> ast.Module | None:
    """The block as Python; a block of methods alone (shown indented, as in a class) is read as a class body."""
    for text in (code, "class Fragment:\n" + textwrap.indent(code, "    ")):
        try:
            return ast.parse(text)
        except SyntaxError:
            continue
    return None


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _okt_base(name: str, classes: dict[str, ast.ClassDef], seen: frozenset[str] = frozenset()) -> type | None:
    """The okt class ``name`` derives from, through the classes of the same block."""
    if name in OKT_CLASSES:
        return OKT_CLASSES[name]
    if name not in classes or name in seen:
        return None
    for base in classes[name].bases:
        found = _okt_base(_base_name(base) or "", classes, seen | {name})
        if found is not None:
            return found
    return None


def _declared(statement: ast.stmt) -> list[str]:
    """The names a statement of a class body declares: a method's (not a decorated one: a timer, a daemon, a
    property of the reader's own), or each name it assigns."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [] if statement.decorator_list else [statement.name]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    if isinstance(statement, ast.Assign):
        names = []
        for target in statement.targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names += [element.id for element in elements if isinstance(element, ast.Name)]
        return names
    return []


def _has(cls: type, name: str) -> bool:
    return hasattr(cls, name) or any(name in getattr(klass, "__annotations__", {}) for klass in cls.__mro__)


def _declarations() -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """``(where, okt class, class, name)`` of each name declared on a subclass of an okt class, and the blocks not
    parsed."""
    declared = []
    unparsed = []
    for source in SOURCES:
        for start, code in _blocks(source):
            tree = _parse(code)
            where = f"{source.relative_to(ROOT)}:{start}"
            if tree is None:
                unparsed.append(where)
                continue
            classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
            for name, node in classes.items():
                base = _okt_base(name, classes)
                if base is None or name in OKT_CLASSES:
                    continue
                for statement in node.body:
                    for attribute in _declared(statement):
                        line = f"{source.relative_to(ROOT)}:{start + statement.lineno}"
                        declared.append((line, base.__name__, name, attribute))
    return declared, unparsed


DECLARED, UNPARSED = _declarations()


def test_the_pages_declare_hooks_and_settings() -> None:
    declared = {(base, name) for _, base, _, name in DECLARED}
    assert ("Reconciler", "enter_in_state") in declared
    assert ("MutableResource", "mutate_with_cr") in declared


def test_every_python_block_of_the_pages_is_python() -> None:
    """A block that does not parse declares nothing this test could check (a test's excerpt, ``...`` for arguments,
    is the one kind of block allowed)."""
    assert UNPARSED == ["docs/samples/memcached.md:207"]


@pytest.mark.parametrize(
    ("where", "base", "cls", "name"), DECLARED, ids=[f"{where} {cls}.{name}" for where, _, cls, name in DECLARED]
)
def test_each_name_a_block_declares_on_an_okt_class_is_one_it_has(where: str, base: str, cls: str, name: str) -> None:
    assert _has(OKT_CLASSES[base], name), f"{where}: {cls} declares {name}, which okt.{base} does not have"
