"""YAML output of the generators: readable, stable, and what ``kubectl apply -f`` expects.

Why it exists: a generated CRD or RBAC file is read by people and diffed in reviews, so every generator emits it the
same way: keys in the order the generator built them (never sorted), multi-line strings (descriptions from
docstrings) as literal blocks, no line folding, several objects separated by ``---``. An object two fields share (a
Deployment's labels and its selector) is written out at each of them, never as an anchor and its aliases: a reader
who edits one of them would change the other unseen (adding a label to the Deployment would change its immutable
selector).

kubectl reads YAML 1.1 as Go's yaml.v2 does, which takes more plain scalars for booleans and numbers than PyYAML does:
a string such as ``y``, ``n``, ``1e3`` or ``0o17`` is quoted, or it would reach the API server as ``true``, ``false``,
``1000`` or ``15`` (an enum value or a default the CRD's own schema then refuses). The scaffold's YAML templates
place each name through :func:`scalar`, the same writer: a kind ``Yes`` or a project ``on`` stays a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """A safe dumper that writes multi-line strings as ``|`` blocks and no anchor or alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_GO_YAML_BOOLEAN = re.compile(r"[yYnN]")
_GO_YAML_NUMBER = re.compile(
    r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)"
)
"""The plain scalars yaml.v2 reads as a boolean or a number (it drops ``_`` first) that PyYAML may leave unquoted."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and all(line == line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if _GO_YAML_BOOLEAN.fullmatch(value) or _GO_YAML_NUMBER.fullmatch(value.replace("_", "")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def scalar(value: str) -> str:
    """``value`` as one YAML scalar on one line, plain when kubectl reads that back as the same string, else quoted:
    for a template placing a name in its YAML text (``kind: {{ kind | yaml_str }}``). A multi-line value is its JSON
    string, a double-quoted YAML scalar (a block scalar would need the template's indentation)."""
    if "\n" in value:
        return json.dumps(value)
    text: str = yaml.dump(value, Dumper=_Dumper, allow_unicode=True, width=1 << 16)
    return text.removesuffix("\n").removesuffix("\n...")


def dump_all(documents: Sequence[dict[str, Any]]) -> str:
    """The documents as one YAML stream (``---`` between documents, none before the first)."""
    return yaml.dump_all(
        documents,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
        explicit_start=False,
    )
