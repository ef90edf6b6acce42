"""Benchmarks: okt vs Kopf vs the raw API floor, on one real local control plane (``python -m benchmarks.run``).

Why this package exists: "okt writes nothing when nothing changed" and "okt converges about as fast as the API
allows" are claims; this package turns them into numbers that anyone can reproduce on their own machine. Every
contender does the same job (the memcached sample: a ConfigMap, a Service and a Deployment per custom resource, then
``Ready=True`` in the status), runs in its own process under its own token user, and every request it sends is
counted from the API server's audit log — the same instrument for all of them.

``run`` is the harness (``scale`` runs it at growing N), ``contenders`` says how each contender is launched,
``kopf_operator`` and ``raw_floor`` are the two contenders that are not okt; ``quiet_invalid`` and ``timers_daemons``
measure one claim each.
"""
