"""The registry: the ordered set of child resources one reconcile manages.

Why this exists: OKT registers every child before mutating and updating them all, so later states work on "all
resources" and pruning knows what is still wanted. Unlike OKT's, registering the same (apiVersion, kind, namespace,
name) twice is an error, never a silent overwrite — and so is registering one object twice through two versions of
its group (``autoscaling/v1`` and ``autoscaling/v2``): two desired states of one object would be written in turn,
one write per reconcile for ever.
"""

from __future__ import annotations

from collections.abc import Iterator

from okt import errors
from okt.kube import kinds
from okt.resources import resource

ObjectName = tuple[str, str, str, str]
"""(group, kind, namespace, name): one object, in whichever version of its group it is read."""


class Registry:
    """Ordered by registration; keyed by (apiVersion, kind, namespace, name). One per reconcile."""

    def __init__(self) -> None:
        self._items: dict[kinds.ObjectKey, resource.Resource] = {}
        self._objects: set[ObjectName] = set()

    def register(self, res: resource.Resource) -> resource.Resource:
        key = res.key
        if object_of(key) in self._objects:
            raise errors.RegistrationError(f"{res.describe()} is already registered")
        self._items[key] = res
        self._objects.add(object_of(key))
        return res

    def unregister(self, res: resource.Resource) -> bool:
        if self._items.pop(res.key, None) is None:
            return False
        self._objects.discard(object_of(res.key))
        return True

    def get(self, key: kinds.ObjectKey) -> resource.Resource | None:
        return self._items.get(key)

    def keys(self) -> frozenset[kinds.ObjectKey]:
        return frozenset(self._items)

    def objects(self) -> frozenset[ObjectName]:
        """The objects registered, each named whatever the version it is registered in (:func:`object_of`)."""
        return frozenset(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[resource.Resource]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)


def object_of(key: kinds.ObjectKey) -> ObjectName:
    """The object a key names, whatever the version it is registered in: (group, kind, namespace, name)."""
    return (key[0].rpartition("/")[0], *key[1:])
