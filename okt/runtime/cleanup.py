"""The operator's clean-up hooks (``@okt.on_cleanup``), run at the end of a graceful shutdown, within its grace period.

Why this exists: a clean-up hook talks to something outside the operator — it flushes to a backend, deregisters from
a service — and that something may not answer. Called on the shutdown's own thread, a hook that hung held the whole
shutdown: the process did not exit until a second SIGTERM or the kubelet's kill, and meanwhile, with leader election,
the elector still renewed the lease, so no standby took over for as long as the hook hung (for ever outside
Kubernetes). So each hook runs on a thread of its own, waited for up to what is left of the shutdown's grace period,
and the shutdown goes on without it when that runs out.

Guarantees: the hooks run one after the other, in their order, each called once, never retried; one that raises is
logged (as okt logs errors: :func:`okt.errors.said`), told to the caller (``okt run`` then exits non-zero: what it was
to undo may not be undone), and the next one runs; one left running (below) that raises later is logged and told the
same way, once, whenever it does. The wait for each asks again how long it
has left as it goes (the manager's grace is cut short when the lease is lost). A hook still running when the time runs
out is left running, and one error line names it and the hooks after it, which are **not started**: the hooks run in
their order because a later one may need what an earlier one did (a flush before the connection it flushes to is
closed), and the hook left running took all the time there was. No hook is started once no time is left (the grace
period spent waiting for reconciles and daemons that did not end): the error line names them. Every write a hook sends
through an okt client passes ``fence`` (:class:`okt.kube.fence.Fence`), which lets each through — a standby's hooks
write as the leader's do, being about the process, not the objects — and counts it until its answer; once a hook is
left running the fence is closed: its later writes raise ``okt.WriteRefused``, nothing sent, and the manager waits for
those already on the wire (:meth:`~okt.kube.fence.Fence.settle`) before it releases the lease, so that no write of it
reaches the API server beside the next leader's.

Caveats: Python cannot interrupt a thread: a hook left running runs on until the process ends (``okt run`` exits at
once, non-zero), and what it sends other than through okt's client (another Kubernetes client, its backend) is not
fenced. Threads a hook starts are fenced only when they run in a copy of its context (``contextvars.copy_context()``,
``asyncio.to_thread``), as a reconcile's are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import structlog

from okt import coroutines, errors, hooks, secret_values
from okt.kube import fence as fence_mod
from okt.runtime import daemons as daemons_mod

LEFT_RUNNING = "the shutdown's grace period is over: this clean-up hook was left running"
"""Why the fence of the clean-up hooks refuses the writes of a hook left running."""

_log = structlog.get_logger("okt.manager")


def run(
    cleanups: Sequence[hooks.CleanupHook],
    *,
    left: daemons_mod.Left,
    fence: fence_mod.Fence,
    failed: Callable[[str], None] = lambda _: None,
) -> list[str]:
    """Run ``cleanups`` one after the other, each on a thread of its own behind ``fence``, waited for for as long as
    ``left`` says (asked again as each wait goes); returns what is left running: ``["the clean-up hook NAME"]``, or
    nothing once every hook started returned. ``failed`` is told each hook that raised (``"the clean-up hook NAME
    failed: ERROR"``, the error as :func:`okt.errors.said` says it), from the hook's thread: before the wait for it
    ended, or whenever a hook left running raises, after this returned (it must not raise)."""
    for index, hook in enumerate(cleanups):
        not_run = [hooks.name_of(later) for later in cleanups[index + 1 :]]
        if left() <= 0:
            _log.error(
                "the grace period is over: the clean-up hooks are not run", not_run=[hooks.name_of(hook), *not_run]
            )
            return []
        name = hooks.name_of(hook)
        thread = threading.Thread(target=_call, args=(hook, fence, failed), name=f"okt-cleanup-{name}", daemon=True)
        thread.start()
        if not daemons_mod.join(thread, left):
            fence.close(LEFT_RUNNING)
            _log.error(
                "a clean-up hook still runs after the grace period: it is left running, its writes refused"
                + (", and the clean-up hooks after it are not run" if not_run else ""),
                hook=name,
                **({"not_run": not_run} if not_run else {}),
            )
            return [f"the clean-up hook {name}"]
    return []


def _call(hook: hooks.CleanupHook, fence: fence_mod.Fence, failed: Callable[[str], None]) -> None:
    # A block of its own (:mod:`okt.secret_values`): the values of the Secrets the hook reads are left out of what is
    # said of its error.
    with fence_mod.fenced(fence, errors.WriteRefused), secret_values.held():
        try:
            coroutines.call(hook)  # an async def hook runs on this thread's own loop
        except Exception as exc:
            # Told from here, not by the wait: a hook left running that raises later is a failure all the same, and
            # the one line logged for it is this one.
            name, said = hooks.name_of(hook), errors.said(exc)
            _log.error("a clean-up hook failed", hook=name, error=said)
            failed(f"the clean-up hook {name} failed: {said}")
