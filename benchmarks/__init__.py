"""Benchmarks: okt vs Kopf vs the raw API floor, on one real local control plane (``python -m benchmarks.run``).

Why this package exists: "okt writes nothing when nothing changed" and "okt converges about as fast as the API
allows" are claims; this package turns them into numbers that anyone can reproduce on their own machine. Every
contender does the same job (the memcached sample: a ConfigMap, a Service and a Deployment per custom resource, then
``Ready=True`` in the status), runs in its own process under its own token user, and every request it sends is
counted from the API server's audit log — the same instrument for all of them.

Modules:

* :mod:`benchmarks.run` — the harness and its command line;
* :mod:`benchmarks.contenders` — how each contender is launched;
* :mod:`benchmarks.kopf_operator` — the equivalent Kopf operator;
* :mod:`benchmarks.raw_floor` — the same writes with no framework at all (the floor);
* :mod:`benchmarks.manifests` — the child objects the Kopf operator and the floor write;
* :mod:`benchmarks.audit` — request counts per user from the audit log;
* :mod:`benchmarks.process` — an operator subprocess with its memory and CPU figures;
* :mod:`benchmarks.cluster` — the harness's own cluster work (CRD, namespace, creates, spec patches, polls);
* :mod:`benchmarks.report` — machine facts, medians, the markdown table and the JSON.
"""
