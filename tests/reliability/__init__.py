"""The reliability suite: the memcached operator under kill -9, apiserver restarts, API faults and fuzzed specs.

Why this exists: okt claims that an operator built with it loses nothing, duplicates nothing, never crashes and backs
off when things go wrong. Each claim is only worth the experiment that tries to break it. This suite runs six, on a
real local control plane, against the operator users run (``okt run samples/memcached/main.py``, as a child
process — :class:`okt.testing.OperatorProcess` — unless a scenario needs to count inside the reconciler):

=================  ================================================================================================
``kill``           kill -9 the operator at random moments (starting up, or reconciling) while custom resources are
                   created and changed; then: all converge, no duplicate or orphan child, none without status
``restart``        kill the kube-apiserver mid-run and bring it back; resources created right after its return are
                   reconciled too (the informers relist and reconnect)
``faults``         a fault-injecting proxy between operator and API (500/503, lost responses, 409s, resets, cut
                   watch streams); everything converges, deletions clean up, no unhandled exception in the log
``fuzz``           hypothesis-generated specs past a CRD whose spec accepts anything (its own control plane); each
                   ends Ready=True or Ready=False with a reason, the operator never crashes, errors back off
``deletions``      deletions with the sample's finalizer: each cleanup takes effect exactly once; a reconciler whose
                   cleanup fails keeps its finalizer (and retries with backoff) until the cleanup works again
``failover``       two replicas with ``--leader-elect`` under their own identities: only the leader writes (the
                   API server's audit log says who wrote), kill -9 the leader, the standby takes over in time
=================  ================================================================================================

Run it: ``make chaos`` (the full sizes; prints a summary table, writes ``tests/reliability/results/chaos.json`` and the
``docs/reliability.md`` page), ``python -m tests.reliability --reduced`` for the sizes of the reduced suite that
``make test`` runs (``tests/e2e/test_reliability.py``), ``--only kill,fuzz`` to pick scenarios.

Guarantees: every wait is bounded; a scenario that fails says which check failed and on which objects; one failing
scenario does not stop the others (the exit status is 1); every process started here — control planes, operators —
is stopped at the end and dies with the harness in any case (``PR_SET_PDEATHSIG``). The judgements themselves are in
:mod:`tests.reliability.checks`, :mod:`tests.reliability.operator_log` and :mod:`tests.reliability.audit_log`; the
audit log is read by :class:`okt.testing.AuditLog`.

Modules:

* :mod:`tests.reliability.profiles` — the full and reduced sizes, and the backoff bound;
* :mod:`tests.reliability.testbed` — the shared control plane and the operator processes run on it;
* :mod:`tests.reliability.workload` — what a user does: create, resize, delete custom resources, wait until settled;
* :mod:`tests.reliability.outcome` — a scenario's result, and the judgements every scenario shares;
* :mod:`tests.reliability.disruptions` — the ``kill``, ``restart``, ``faults`` and ``failover`` scenarios;
* :mod:`tests.reliability.fuzz` — the ``fuzz`` scenario and its spec generators;
* :mod:`tests.reliability.cleanup` — the ``deletions`` scenario and its cleanup ledger;
* :mod:`tests.reliability.suite` — the chosen scenarios in order, on one testbed;
* :mod:`tests.reliability.report` — the summary table, the JSON and the ``docs/reliability.md`` page;
* :mod:`tests.reliability.checks`, :mod:`~tests.reliability.operator_log`, :mod:`~tests.reliability.audit_log` — the
  judgements, as pure functions over what the API server, the operator's log and the audit log say.
"""
