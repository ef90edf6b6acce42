"""A reconciler's ``async def`` hooks (Kopf's usual kind) are awaited: each behaves as its ``def`` twin."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pydantic
import pytest

import okt
from okt.kube import kinds
from okt.testing import FakeClient, condition

GADGET = kinds.Kind("toys.example.com/v1", "Gadget", "gadgets")


class GadgetSpec(pydantic.BaseModel):
    size: int = 1


class GadgetConfig(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
data:
  size: "{{ cr.spec.size }}"
"""


class AsyncGadgets(okt.Reconciler):
    """Every hook ``async def``, as a reconciler ported from Kopf has them."""

    api_version = GADGET.api_version
    kind = GADGET.kind
    plural = GADGET.plural
    spec_model = GadgetSpec
    owns = (GadgetConfig,)
    finalizer = "toys.example.com/cleanup"
    loops: ClassVar[list[tuple[str, asyncio.AbstractEventLoop]]] = []
    cleaned: ClassVar[list[str]] = []

    async def resources(self, ctx: okt.Context) -> list[okt.Resource]:  # type: ignore[override]
        await asyncio.sleep(0)
        type(self).loops.append(("resources", asyncio.get_running_loop()))
        return [GadgetConfig(ctx.cr)]

    async def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:  # type: ignore[override]
        super().enter_in_state(state, ctx)  # its built-in ObjectsGetter work awaits resources() above
        await asyncio.sleep(0)
        type(self).loops.append(("enter_in_state", asyncio.get_running_loop()))
        if state is okt.State.SuccessManager and ctx.cr.spec.size > 2:
            return okt.requeue_after(30)
        return None

    async def ready(self, ctx: okt.Context) -> tuple[bool, str, str]:  # type: ignore[override]
        await asyncio.sleep(0)
        return True, "Served", "the gadget is served"

    async def cleanup(self, ctx: okt.Context) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        type(self).cleaned.append(ctx.cr.name)


@pytest.fixture
def fake() -> Iterator[FakeClient]:
    client = FakeClient(kinds=[GADGET])
    yield client
    client.close()


def gadget(size: int) -> dict[str, Any]:
    return {
        "apiVersion": GADGET.api_version,
        "kind": GADGET.kind,
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"size": size},
    }


def test_an_async_reconciler_creates_its_child_and_reports_what_its_async_ready_says(fake: FakeClient) -> None:
    fake.put(gadget(size=2))

    run = okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")

    assert run.outcome.kind is okt.OutcomeKind.DONE, run.outcome
    config = fake.stored(kinds.CONFIG_MAP, "g-config", "ns")
    assert config is not None and config["data"] == {"size": "2"}
    ready = condition(fake.stored(GADGET, "g", "ns"), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("True", "Served")


def test_an_outcome_an_async_hook_returns_is_the_reconciles(fake: FakeClient) -> None:
    fake.put(gadget(size=3))

    run = okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")

    assert run.outcome == okt.requeue_after(30)


def test_the_hooks_of_the_reconciles_of_one_thread_run_on_one_loop(fake: FakeClient) -> None:
    fake.put(gadget(size=2))
    AsyncGadgets.loops.clear()

    def twice() -> None:
        okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")
        okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")

    worker = threading.Thread(target=twice)
    worker.start()
    worker.join()

    entered = {id(loop) for hook, loop in AsyncGadgets.loops if hook == "enter_in_state"}
    # resources() is reached from inside enter_in_state's coroutine (its super() call): it runs aside, on a loop of
    # its own, each time.
    aside = [loop for hook, loop in AsyncGadgets.loops if hook == "resources"]
    assert len(entered) == 1 and len(aside) == 2
    assert all(loop.is_closed() and id(loop) not in entered for loop in aside)


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (okt.GiveUp("the image is gone"), "give_up(the image is gone)"),
        (okt.TemporaryError("later", delay=7), "retry(TemporaryError, 7.0)"),
    ],
)
def test_an_okt_error_an_async_hook_raises_is_recorded_as_a_def_hooks_is(
    fake: FakeClient, raised: Exception, said: str
) -> None:
    class Failing(AsyncGadgets):
        async def check(self, ctx: okt.Context) -> None:  # type: ignore[override]
            await asyncio.sleep(0)
            raise raised

    class FailingTwin(AsyncGadgets):
        def check(self, ctx: okt.Context) -> None:
            raise raised

    fake.put(gadget(size=2))
    twin = FakeClient(kinds=[GADGET])
    twin.put(gadget(size=2))

    run = okt.reconcile(Failing(), fake, None, "ns", "g")
    twins = okt.reconcile(FailingTwin(), twin, None, "ns", "g")
    twin.close()

    assert str(run.outcome) == str(twins.outcome) == said
    assert run.path_str == twins.path_str


def test_an_async_cleanup_runs_before_the_finalizer_is_removed(fake: FakeClient) -> None:
    fake.put(gadget(size=2))
    okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")  # adds the finalizer
    fake.delete(GADGET, "g", "ns")
    AsyncGadgets.cleaned.clear()

    okt.reconcile(AsyncGadgets(), fake, None, "ns", "g")

    assert AsyncGadgets.cleaned == ["g"]
    assert fake.stored(GADGET, "g", "ns") is None


@pytest.mark.parametrize("filter_name", ["when", "selects"])
def test_an_async_filter_is_refused_where_the_reconciler_is_defined(filter_name: str) -> None:
    async def passes(self: Any, obj: Any) -> bool:
        return True

    with pytest.raises(TypeError, match=rf"^Filtered\.{filter_name} is 'async def', but it is a filter"):
        type("Filtered", (okt.Reconciler,), {filter_name: passes})


def test_an_async_def_of_okts_that_is_no_hook_is_refused() -> None:
    async def controller_name(cls: Any) -> str:
        return "x"

    with pytest.raises(TypeError, match=r"^Named\.controller_name is 'async def', but okt calls controller_name as"):
        type("Named", (okt.Reconciler,), {"controller_name": classmethod(controller_name)})


def test_an_async_generator_hook_is_refused() -> None:
    async def resources(self: Any, ctx: Any) -> Any:
        yield None

    with pytest.raises(TypeError, match=r"^Generating\.resources is an async generator"):
        type("Generating", (okt.Reconciler,), {"resources": resources})


def test_an_async_method_of_the_operators_own_is_left_to_it() -> None:
    class Helped(okt.Reconciler):
        async def fetch_upstream(self) -> str:  # okt never calls it: the operator awaits it
            return "v1"

    assert asyncio.run(Helped().fetch_upstream()) == "v1"
