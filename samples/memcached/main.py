"""The memcached operator's entry point: ``okt run samples/memcached/main.py``.

``okt run`` imports this file (with its directory on ``sys.path``, so the ``memcached_operator`` package beside it
imports as a top-level package, as it does in the container image) and runs every reconciler bound here. Exactly one
is bound: with the finalizer, or without it when ``MEMCACHED_FINALIZER=off``.
"""

import memcached_operator

Memcached = memcached_operator.reconciler_class()
