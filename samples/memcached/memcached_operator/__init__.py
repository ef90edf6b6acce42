"""memcached-operator: runs memcached clusters described by ``Memcached`` custom resources (cache.example.com).

The package is what ``main.py`` imports for ``okt run`` and what the tests, the demo and the benchmarks import.
Its modules, from the API down:

* :mod:`.api` — the spec and status models (the CRD is generated from them);
* :mod:`.policy` — semantic checks beyond the schema;
* :mod:`.settings` — memcached settings derived from the cluster size;
* :mod:`.resources` — the children, generated from ``manifests/`` by ``okt gen resource`` plus the author's part;
* :mod:`.inventory` — the per-namespace inventory ConfigMap the finalizer cleans;
* :mod:`.reconciler` — the reconciler itself.
"""

from .api import API_VERSION, GROUP, KIND, PLURAL, VERSION, MemcachedSpec, MemcachedStatus
from .reconciler import (
    FINALIZER,
    FINALIZER_ENV,
    MemcachedReconciler,
    MemcachedReconcilerWithoutFinalizer,
    finalizer_enabled,
    reconciler_class,
)

__all__ = [
    "API_VERSION",
    "FINALIZER",
    "FINALIZER_ENV",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "MemcachedReconciler",
    "MemcachedReconcilerWithoutFinalizer",
    "MemcachedSpec",
    "MemcachedStatus",
    "finalizer_enabled",
    "reconciler_class",
]
