"""YAML output of the generators: readable, stable, and what ``kubectl apply -f`` expects.

Why it exists: a generated CRD or RBAC file is read by people and diffed in reviews, so every generator emits it the
same way: keys in the order the generator built them (never sorted), multi-line strings (descriptions from
docstrings) as literal blocks, no line folding, several objects separated by ``---``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """A safe dumper that writes multi-line strings as ``|`` blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and all(line == line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


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
