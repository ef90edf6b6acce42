"""Kinds named as ``kubectl`` names them: kind, plural, singular or short name, with or without a group.

Why this exists: operator authors type ``deploy``, ``deployments.apps``, ``Memcached`` or
``memcacheds.cache.example.com`` at ``kubectl`` all day; okt accepts the same names (in a reconciler's declaration, a
watch, ``okt run --reconciler``) and resolves them with the API server's discovery, as kubectl does.

Rules (kubectl's, made deterministic):

* ``NAME`` is matched, case-insensitively, against each served resource's plural, singular (the kind, lowercased,
  where the server leaves it empty — built-in kinds on older servers), kind and short names; ``NAME.GROUP`` the same,
  within that group only (``NAME.VERSION.GROUP`` also pins the version);
* a plural, singular or kind match beats a short-name match; within a group, the server's preferred version wins;
* the same name in several groups is **ambiguous** — except that the core group wins (``events`` is the core Event,
  not ``events.k8s.io``'s), as it does for kubectl — and the error lists the qualified names to choose from;
* subresources (``pods/log``) are never matched.

An unknown or ambiguous name is one :class:`okt.ConfigurationError` line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from okt import errors
from okt.kube import kinds

_VERSION = re.compile(r"^v\d+((alpha|beta)\d+)?\Z")


@dataclasses.dataclass(frozen=True)
class Served:
    """One resource the server serves, as discovery lists it."""

    kind: kinds.Kind
    singular: str
    short_names: tuple[str, ...] = ()
    preferred: bool = True
    """Whether its version is its group's preferred one."""
    verbs: tuple[str, ...] = ()
    """What the server lets clients do with it (``get``, ``list``, ``watch``, ...); empty where discovery says none."""

    @property
    def qualified(self) -> str:
        """``plural.group`` (``plural`` in the core group): the unambiguous name kubectl takes."""
        return f"{self.kind.plural}.{self.kind.group}" if self.kind.group else self.kind.plural


def served_from(api_version: str, listing: Mapping[str, Any], preferred: bool) -> list[Served]:
    """The resources of one ``APIResourceList`` (``GET /api/v1`` or ``/apis/GROUP/VERSION``), subresources aside."""
    found = []
    for item in listing.get("resources") or ():
        name = str(item.get("name") or "")
        if not name or "/" in name:
            continue
        kind_name = str(item.get("kind") or "")
        found.append(
            Served(
                kinds.Kind(api_version, kind_name, name, bool(item.get("namespaced"))),
                str(item.get("singularName") or kind_name.lower()),
                tuple(str(s) for s in item.get("shortNames") or ()),
                preferred,
                tuple(str(v) for v in item.get("verbs") or ()),
            )
        )
    return found


def _split(name: str) -> list[tuple[str, str | None, str | None]]:
    """The readings of ``name``: (resource, version or None, group or None), most specific first."""
    head, _, rest = name.partition(".")
    if not rest:
        return [(head, None, None)]
    readings: list[tuple[str, str | None, str | None]] = []
    version, _, group = rest.partition(".")
    if _VERSION.match(version):
        readings.append((head, version, group))  # deployments.v1.apps; "v1" alone is the core group
    readings.append((head, None, rest))
    return readings


def _strength(served: Served, word: str) -> int:
    """2: plural, singular or kind; 1: a short name; 0: no match."""
    if word in (served.kind.plural.lower(), served.singular.lower(), served.kind.kind.lower()):
        return 2
    if word in (s.lower() for s in served.short_names):
        return 1
    return 0


def match(name: str, served: Iterable[Served]) -> kinds.Kind:
    """The kind ``name`` designates among the ``served`` resources (see the module's rules).

    Raises:
        okt.ConfigurationError: no resource, or resources of several groups, answer to ``name``.
    """
    text = name.strip()
    if not text:
        raise errors.ConfigurationError("an empty kind name")
    everything: Sequence[Served] = list(served)
    for word, version, group in _split(text.lower()):
        candidates = [
            s
            for s in everything
            if (group is None or s.kind.group == group)
            and (version is None or s.kind.version == version)
            and _strength(s, word)
        ]
        if not candidates:
            continue
        best = max(_strength(s, word) for s in candidates)
        candidates = [s for s in candidates if _strength(s, word) == best]
        by_group: dict[str, list[Served]] = {}
        for candidate in candidates:
            by_group.setdefault(candidate.kind.group, []).append(candidate)
        if len(by_group) > 1 and "" in by_group:
            by_group = {"": by_group[""]}  # the core group wins, as with kubectl
        if len(by_group) > 1:
            choices = ", ".join(sorted({s.qualified for s in candidates}))
            raise errors.ConfigurationError(f"the kind name {name!r} is ambiguous: name one of {choices}")
        (in_group,) = by_group.values()
        chosen = sorted(in_group, key=lambda s: (not s.preferred, _version_rank(s.kind.version)))[0]
        return chosen.kind
    raise errors.ConfigurationError(
        f"the server serves no kind named {name!r} (a kind, plural, singular or short name, optionally with its group)"
    )


def _version_rank(version: str) -> tuple[int, int, int]:
    """Kubernetes' version priority: GA before beta before alpha, higher numbers first."""
    found = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not found:
        return (3, 0, 0)
    major, stage, minor = int(found[1]), found[2], int(found[3] or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor)
