"""The registry: the ordered set of child resources one reconcile manages.

Why this exists: OKT registers every child before mutating and updating them all, so later states work on "all
resources" and pruning knows what is still wanted. Unlike OKT's, registering the same (apiVersion, kind, namespace,
name) twice is an error, never a silent overwrite.
"""

from __future__ import annotations

from collections.abc import Iterator

from okt import errors
from okt.kube import kinds
from okt.resources import resource


class Registry:
    """Ordered by registration; keyed by (apiVersion, kind, namespace, name). One per reconcile."""

    def __init__(self) -> None:
        self._items: dict[kinds.ObjectKey, resource.Resource] = {}

    def register(self, res: resource.Resource) -> resource.Resource:
        key = res.key
        if key in self._items:
            raise errors.RegistrationError(f"{res.describe()} is already registered")
        self._items[key] = res
        return res

    def unregister(self, res: resource.Resource) -> bool:
        return self._items.pop(res.key, None) is not None

    def get(self, key: kinds.ObjectKey) -> resource.Resource | None:
        return self._items.get(key)

    def keys(self) -> frozenset[kinds.ObjectKey]:
        return frozenset(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[resource.Resource]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)
