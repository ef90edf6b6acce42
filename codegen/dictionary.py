"""The kind dictionary: what the generators know about each Kubernetes kind.

Why it exists: a resource wrapper needs facts that a manifest does not carry — which okt base class fits the kind
(create/delete only, mutable, or a helper), which fields decide an update, the plural used in RBAC rules, whether the
kind is namespaced. OKT kept those facts in a dictionary compiled into its generator; okt keeps them in a data file,
``codegen/kinds.yaml``, that an author extends without touching okt: ``--dictionary FILE`` adds kinds or overrides
fields of known ones (only the fields the file sets).

Guarantees:

* every entry is validated (pydantic) when loaded; a bad entry is a :class:`~okt.codegen.errors.CodegenError` naming the
  file, the kind and the field;
* :meth:`KindDictionary.lookup` accepts the kind in any letter case and answers an unknown kind with the closest
  known names: ``unknown kind 'Deploymnet' (did you mean: Deployment?)``;
* dictionaries are immutable values; extending one returns a new one.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import pydantic
import yaml

from okt.codegen import errors
from okt.kube import kinds

BUILTIN_PATH = Path(__file__).with_name("kinds.yaml")
"""The dictionary shipped with okt."""

BaseClass = Literal[
    "Resource",
    "MutableResource",
    "SecretResource",
    "ServiceResource",
    "DeploymentResource",
    "StatefulSetResource",
]
"""The okt classes a generated wrapper may extend; all but ``Resource`` are mutable."""

_KIND_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_FIELD_PATTERN = r"^[A-Za-z][A-Za-z0-9]*$"
_API_VERSION_PATTERN = f"^{kinds.API_VERSION_PATTERN}$"
_EXAMPLE_WIDTH = 78  # the generated comment line then fits 88 columns
_UNHASHABLE_FIELDS = frozenset({"apiVersion", "kind", "metadata", "status"})


class KindSpec(pydantic.BaseModel):
    """What the generators know about one Kubernetes kind (one entry of the dictionary)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    kind: str = pydantic.Field(pattern=_KIND_PATTERN.pattern)
    api_version: str = pydantic.Field(alias="apiVersion", pattern=_API_VERSION_PATTERN)
    plural: str = pydantic.Field(pattern=r"^[a-z][a-z0-9]*$")
    namespaced: bool
    base: BaseClass
    hashed: tuple[str, ...]
    example: str | None = None

    @pydantic.field_validator("hashed")
    @classmethod
    def _check_hashed(cls, fields: tuple[str, ...]) -> tuple[str, ...]:
        for field in fields:
            if not re.fullmatch(_FIELD_PATTERN, field):
                raise ValueError(f"{field!r} is not a top-level field name")
            if field in _UNHASHABLE_FIELDS:
                raise ValueError(f"{field!r} cannot be hashed (okt manages it)")
        duplicates = sorted({field for field in fields if fields.count(field) > 1})
        if duplicates:
            raise ValueError(f"listed twice: {', '.join(duplicates)}")
        return fields

    @pydantic.field_validator("example")
    @classmethod
    def _check_example(cls, example: str | None) -> str | None:
        if example is not None and ("\n" in example or not example.strip() or len(example) > _EXAMPLE_WIDTH):
            raise ValueError(f"must be one non-empty line of Python of at most {_EXAMPLE_WIDTH} characters")
        return example

    @property
    def group(self) -> str:
        """The API group (``""`` for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        """The API version without its group."""
        return self.api_version.rpartition("/")[2]

    @property
    def mutable(self) -> bool:
        """Whether the wrapper updates live objects (every base but ``Resource``)."""
        return self.base != "Resource"

    def to_entry(self) -> dict[str, Any]:
        """The entry as written in a dictionary file (without the ``kind`` key, which is the entry's name)."""
        entry = self.model_dump(by_alias=True, exclude={"kind"}, exclude_none=True)
        entry["hashed"] = list(self.hashed)
        return entry


@dataclass(frozen=True)
class KindDictionary:
    """An immutable set of :class:`KindSpec`, keyed by kind, with the files it was read from."""

    specs: Mapping[str, KindSpec]
    sources: tuple[Path, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "specs", MappingProxyType(dict(sorted(self.specs.items()))))

    def __iter__(self) -> Iterator[KindSpec]:
        return iter(self.specs.values())

    def __len__(self) -> int:
        return len(self.specs)

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str) and self._find(kind) is not None

    def lookup(self, kind: str) -> KindSpec:
        """Return the entry of ``kind`` (any letter case).

        Raises:
            CodegenError: the kind is unknown; the message suggests the closest known kinds.
        """
        spec = self._find(kind)
        if spec is not None:
            return spec
        by_lower = {name.lower(): name for name in self.specs}
        close = difflib.get_close_matches(kind.lower(), list(by_lower), n=3, cutoff=0.75)
        if close:
            hint = f"did you mean: {', '.join(by_lower[name] for name in close)}?"
        else:
            hint = "see `okt gen resource --list` for the known kinds, or add it with --dictionary FILE"
        raise errors.CodegenError(f"unknown kind {kind!r} ({hint})")

    def extended(self, path: Path) -> KindDictionary:
        """Return a new dictionary with the entries of the file at ``path`` added or merged over this one."""
        raw = _read_entries(path)
        specs = dict(self.specs)
        for name, entry in raw.items():
            current = self._find(name)
            merged = {**current.to_entry(), **entry} if current is not None else entry
            key = current.kind if current is not None else name
            specs[key] = _validate(path, key, merged)
        return KindDictionary(specs=specs, sources=(*self.sources, path))

    def _find(self, kind: str) -> KindSpec | None:
        if kind in self.specs:
            return self.specs[kind]
        matches = [spec for name, spec in self.specs.items() if name.lower() == kind.lower()]
        return matches[0] if len(matches) == 1 else None


@functools.cache
def builtin() -> KindDictionary:
    """The dictionary shipped with okt (read once)."""
    return KindDictionary(specs={}, sources=()).extended(BUILTIN_PATH)


def load(extensions: Sequence[Path] = ()) -> KindDictionary:
    """The shipped dictionary extended, in order, by each file of ``extensions``.

    Raises:
        CodegenError: a file is unreadable, is not YAML, or holds an invalid entry.
    """
    dictionary = builtin()
    for path in extensions:
        dictionary = dictionary.extended(path)
    return dictionary


def lookup(kind: str, dictionary: KindDictionary | None = None) -> KindSpec:
    """Return the entry of ``kind`` in ``dictionary`` (default: the shipped one); see :meth:`KindDictionary.lookup`."""
    return (dictionary if dictionary is not None else builtin()).lookup(kind)


def _read_entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise errors.CodegenError(f"cannot read dictionary {path}: {reason}") from exc
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise errors.CodegenError(f"dictionary {path} is not valid YAML: {errors.yaml_problem(exc)}") from exc
    if not isinstance(document, dict) or set(document) != {"kinds"} or not isinstance(document["kinds"], dict):
        raise errors.CodegenError(f"dictionary {path} must be a mapping with one key, 'kinds' (kind name -> entry)")
    entries: dict[str, dict[str, Any]] = {}
    for name, entry in document["kinds"].items():
        if not isinstance(name, str) or not _KIND_PATTERN.match(name):
            raise errors.CodegenError(f"dictionary {path}: {name!r} is not a kind name (CamelCase, like ConfigMap)")
        if not isinstance(entry, dict):
            raise errors.CodegenError(f"dictionary {path}: kind {name}: the entry must be a mapping of fields")
        entries[name] = entry
    return entries


def _validate(path: Path, kind: str, entry: Mapping[str, Any]) -> KindSpec:
    try:
        return KindSpec.model_validate({**entry, "kind": kind})
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "entry"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise errors.CodegenError(f"dictionary {path}: kind {kind}: {where}: {first['msg']}{more}") from exc
