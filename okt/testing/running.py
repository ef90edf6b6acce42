"""An operator running in the test's own process: okt's Manager, started until synced, stopped cleanly.

Why this exists: most tests of an operator want it running while they act as a user — create an object, wait for its
children — and gone afterwards, without a subprocess to start. :class:`RunningOperator` is
:class:`okt.runtime.manager.Manager` (the one ``okt run`` uses) with what a test needs around it: start and return
once the workers run, stop gracefully at the end of a ``with`` block, and say so when the shutdown did not finish.

Example::

    from okt.testing import RunningOperator

    with RunningOperator.start(kube, MemcachedReconciler, namespaces=[namespace]):
        kube.create(memcached, kind)
        wait_for(lambda: kube.get_or_none(kinds.CONFIG_MAP, "cache-config", namespace))

Given the operator's module (``from my_operator import main``) or its file, as ``okt run`` is, it runs what ``okt run``
would: the reconcilers the module defines (or lists in ``__all__``) and its ``@okt.on_startup`` and ``@okt.on_cleanup``
hooks::

    from my_operator import main

    with RunningOperator.start(kube, main, namespaces=[namespace]):  # its start-up hooks ran
        ...
    # its clean-up hooks ran

Guarantees: :meth:`RunningOperator.start` returns only once the caches are synced and the workers run (with leader
election: once this replica leads); if that does not happen in time, the manager is stopped before
:class:`okt.testing.WaitTimeout` is raised, saying what the manager's readiness says (a watched kind the API server
refuses to list or watch, with the rule to grant; a lease it cannot reach). :meth:`RunningOperator.stop` is idempotent.
The end of a ``with`` block fails the test where ``okt run`` would exit 1: a stop that did not end in time, a lost
lease, a reconcile, daemon or hook still running after the grace period, a clean-up hook that raised
(:meth:`RunningOperator.unclean_stop` says which) — unless the block already raised.

Caveats: no probe or metrics server by default (``metrics_bind="0"``), and the test process's SIGTERM and SIGINT are
left alone — use :class:`okt.testing.OperatorProcess` to test those. The manager's defaults apply otherwise,
including its memory tuning (``tune_memory=False`` to leave the test process's malloc settings alone). Operator code
that builds a client of its own from the environment (``okt.Client.from_kubeconfig()``) reads the test process's
``$KUBECONFIG``, not the client given here: set it for the test (``monkeypatch.setenv``), or run the operator with
:class:`okt.testing.OperatorProcess`, whose ``okt run`` finds its ``--kubeconfig`` in ``$KUBECONFIG`` too.
"""

from __future__ import annotations

import os
import types
from collections.abc import Sequence
from typing import Any, Self

from okt import errors, hooks
from okt.kube import client as kube_client
from okt.reconciler import loader
from okt.reconciler import reconciler as reconciler_mod
from okt.runtime import manager as manager_mod
from okt.testing import waiting

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class RunningOperator:
    """A started :class:`okt.runtime.manager.Manager`; a context manager that stops it on exit."""

    def __init__(self, manager: manager_mod.Manager) -> None:
        self.manager = manager

    @classmethod
    def start(
        cls,
        client: kube_client.Client,
        reconcilers: type[reconciler_mod.Reconciler]
        | Sequence[type[reconciler_mod.Reconciler]]
        | types.ModuleType
        | str
        | os.PathLike[str],
        *,
        namespaces: Sequence[str] | None = None,
        max_concurrent: int = 4,
        metrics_bind: str = "0",
        timeout: float = START_TIMEOUT,
        **options: Any,
    ) -> RunningOperator:
        """Start a manager running ``reconcilers`` and return once its workers run.

        Args:
            client: the client the operator uses (give it one of its own to count its requests apart).
            reconcilers: one :class:`okt.Reconciler` subclass, or several; or the operator as ``okt run`` takes it: its
                module, or its file (a path, or a string as ``okt run TARGET`` reads it: ``"main.py"``, a module's
                dotted name), whose reconcilers run with its ``@okt.on_startup`` and ``@okt.on_cleanup`` hooks and
                its ``@okt.probe`` probes.
            namespaces: the namespaces to watch (all when None).
            max_concurrent: workers per controller.
            metrics_bind: the probe and metrics server's address (``"0"``: none).
            timeout: how long to wait for the caches to sync, in seconds.
            options: any other :class:`~okt.runtime.manager.Manager` argument (``grace_period``, ``reconcile``...);
                ``on_startup``/``on_cleanup`` given with a module run after the module's own hooks; ``probes``
                given with it are added to the module's.

        Raises:
            okt.testing.WaitTimeout: the workers did not start in time (the manager is stopped); its message carries
                the manager's readiness reason, naming a watched kind the API server refuses and the rule to grant.
            okt.errors.ApiError: a reconciler's kind cannot be resolved.
            okt.errors.ConfigurationError: the operator's file or module cannot be loaded or defines no reconciler
                (as ``okt run`` says it), or one of its start-up hooks raised (nothing was watched), or ``probes``
                names one of the module's own probes.
        """
        chosen, startups, cleanups, probes = _operator(reconcilers)
        startups += options.pop("on_startup", ())
        cleanups += options.pop("on_cleanup", ())
        given = dict(options.pop("probes", None) or {})
        twice = sorted(set(given) & set(probes))
        if twice:
            raise errors.ConfigurationError(f"probes= names probes the operator's module declares: {', '.join(twice)}")
        probes.update(given)
        manager = manager_mod.Manager(
            client,
            chosen,
            namespaces=namespaces,
            max_concurrent=max_concurrent,
            metrics_bind=metrics_bind,
            on_startup=startups,
            on_cleanup=cleanups,
            probes=probes,
            **options,
        )
        manager.start()

        def awaited() -> str:
            # What /readyz would say: a watched kind the API server refuses, with the rule to grant; the lease.
            _, reason = manager.readiness()
            return f"the operator's caches to sync and its workers to start ({reason})"

        try:
            waiting.wait_for(lambda: manager.working, timeout=timeout, message=awaited)
        except BaseException:
            manager.stop()
            manager.join(STOP_TIMEOUT)
            raise
        return cls(manager)

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Shut down gracefully (in-flight reconciles finish); False when it took longer than ``timeout`` seconds."""
        self.manager.stop()
        return self.manager.join(timeout)

    def __enter__(self) -> Self:
        return self

    def unclean_stop(self) -> str | None:
        """Why the stop was not clean, as ``okt run`` would say before exiting 1 (None: it was clean, or it has not
        stopped): the lease was lost, work still ran past the grace period, or a clean-up hook raised."""
        manager = self.manager
        if manager.lost_leadership:
            return "the operator lost the leader lease"
        if manager.left_running:
            return (
                f"the operator stopped with {'; '.join(manager.left_running)} still running after the "
                f"{manager.grace_period:g} s grace period (grace_period=)"
            )
        if manager.failed_cleanups:
            return "; ".join(manager.failed_cleanups)
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        stopped = self.stop()
        if exc_type is not None:
            return  # the test's own failure says more than how the operator stopped after it
        if not stopped:
            raise waiting.WaitTimeout(f"the operator did not stop within {STOP_TIMEOUT:.0f}s")
        # The shutdown ends in time by leaving work behind: okt run exits 1 there, so the test fails here.
        unclean = self.unclean_stop()
        if unclean is not None:
            raise AssertionError(f"the operator did not stop cleanly: {unclean}")


def _operator(
    given: type[reconciler_mod.Reconciler]
    | Sequence[type[reconciler_mod.Reconciler]]
    | types.ModuleType
    | str
    | os.PathLike[str],
) -> tuple[
    list[type[reconciler_mod.Reconciler]], list[hooks.StartupHook], list[hooks.CleanupHook], dict[str, hooks.Probe]
]:
    """The reconcilers, the start-up and clean-up hooks and the probes to run: a module's or a file's as ``okt run``
    finds them."""
    if isinstance(given, type):
        return [given], [], [], {}
    if isinstance(given, (str, os.PathLike)):
        target = os.fspath(given)
        module = loader.load_module(target)
    elif isinstance(given, types.ModuleType):
        target, module = given.__name__, given
    else:
        return list(given), [], [], {}
    startups, cleanups = hooks.collect(module)
    return loader.reconcilers_of(module, target), startups, cleanups, hooks.probes_of(module)
