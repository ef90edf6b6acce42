"""The reliability suite: the memcached operator under kill -9, apiserver restarts, API faults and fuzzed specs.

Why this exists: okt claims that an operator built with it loses nothing, duplicates nothing, never crashes and backs
off when things go wrong. Each claim is only worth the experiment that tries to break it. This suite runs six
(``kill``, ``restart``, ``faults``, ``fuzz``, ``deletions``, ``failover``: what each does and what must hold is the
table at the top of ``page.md``, the fixed text of ``docs/reliability.md``), on a real local control plane, against
the operator users run (``okt run samples/memcached/main.py`` as a child process, unless a scenario needs to count
inside the reconciler).

Run it: ``make chaos`` (the full sizes; writes ``tests/reliability/results/chaos.json`` and ``docs/reliability.md``),
``python -m tests.reliability --reduced`` for the sizes ``make test`` runs (``tests/e2e/test_reliability.py``),
``--only kill,fuzz`` to pick scenarios.

Guarantees: every wait is bounded; a scenario that fails says which check failed and on which objects; one failing
scenario does not stop the others (the exit status is 1); every process started here is stopped at the end and dies
with the harness in any case (``PR_SET_PDEATHSIG``). The judgements are pure functions in :mod:`~.checks` (what the
API server holds) and :mod:`~.logs` (the operator's log, the audit log); :mod:`~.testbed` is the control plane and
what a user does on it, :mod:`~.disruptions`, :mod:`~.fuzz` and :mod:`~.cleanup` the scenarios, :mod:`~.outcome`
their results, :mod:`~.report` the page.
"""
