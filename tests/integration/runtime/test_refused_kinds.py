"""A child kind whose list and watch the API server starts refusing (403: its RBAC rule taken away) under a running
controller: the reconciles that read it fail, saying so, instead of trusting what the cache held before the refusal;
the controllers that do not read it go on; once the rule is back, the changes the watch missed are reconciled.

The operator runs as a ServiceAccount whose Role the test edits, so every refusal is the API server's own.
"""

from __future__ import annotations

import pathlib
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
import structlog

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import core
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import manager as manager_mod
from okt.testing import condition, envtest, faults, wait_for
from tests.integration.runtime import conftest as runtime

pytestmark = pytest.mark.integration

ACCOUNT = "refused-operator"
ROLE = kinds.Kind("rbac.authorization.k8s.io/v1", "Role", "roles")
BINDING = kinds.Kind("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
ACCOUNT_KIND = kinds.Kind("v1", "ServiceAccount", "serviceaccounts")
SECRET = kinds.Kind("v1", "Secret", "secrets")

GADGET_RULES = [
    {"apiGroups": [runtime.GROUP], "resources": ["gadgets"], "verbs": ["get", "list", "watch", "update", "patch"]},
    {"apiGroups": [runtime.GROUP], "resources": ["gadgets/status"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": [runtime.GROUP], "resources": ["gadgets/finalizers"], "verbs": ["update"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
]
CONFIG_MAP_RULE = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}
CONFIG_MAP_WRITES = {
    "apiGroups": [""],
    "resources": ["configmaps"],
    "verbs": ["get", "create", "update", "patch", "delete"],
}


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


class ConfiguredGadgets(okt.Reconciler):
    api_version = f"{runtime.GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    owns = (GadgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GadgetConfig(ctx.cr)]


class Secrets(okt.Reconciler):
    api_version = "v1"
    kind = "Secret"


def set_rules(kube: kube_client.Client, namespace: str, rules: list[dict[str, Any]]) -> None:
    kube.patch(ROLE, ACCOUNT, {"rules": rules}, namespace)


@pytest.fixture
def operator_kubeconfig(kube: kube_client.Client, control_plane: envtest.ControlPlane, namespace: str) -> pathlib.Path:
    """A kubeconfig holding only a token of a ServiceAccount that may do what the reconcilers need."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": namespace}}
    kube.create(account, ACCOUNT_KIND)
    role = {
        "apiVersion": ROLE.api_version,
        "kind": "Role",
        "metadata": {"name": ACCOUNT, "namespace": namespace},
        "rules": [*GADGET_RULES, CONFIG_MAP_RULE],
    }
    kube.create(role, ROLE)
    binding = {
        "apiVersion": BINDING.api_version,
        "kind": "RoleBinding",
        "metadata": {"name": ACCOUNT, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
    }
    kube.create(binding, BINDING)
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    answer = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token",
        verb="create",
        resource="serviceaccounts/token",
        body=review,
    ).json()
    user = envtest.TokenUser(name=f"system:serviceaccount:{namespace}:{ACCOUNT}", token=answer["status"]["token"])
    return control_plane.kubeconfig_for(user, control_plane.directory / f"kubeconfig-{secrets.token_hex(4)}")


@pytest.fixture
def operator(operator_kubeconfig: pathlib.Path) -> Iterator[kube_client.Client]:
    """A client holding only a token of a ServiceAccount that may do what the reconcilers need."""
    client = kube_client.Client.from_kubeconfig(operator_kubeconfig)
    yield client
    client.close()


def ready(kube: kube_client.Client, kind: kinds.Kind, namespace: str, generation: int) -> dict[str, Any] | None:
    """The Gadget's Ready condition once written for ``generation``, else None."""
    found = condition(kube.get_or_none(kind, "g", namespace), "Ready")
    return found if found is not None and found.get("observedGeneration") == generation else None


def test_a_child_kind_whose_watch_is_refused_fails_the_reconciles_that_read_it_and_others_go_on(
    kube: kube_client.Client,
    operator: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    secrets_reconcile = fake_reconcile()
    # Watches the server ends within two seconds: the one open when the rule goes is not kept for minutes.
    cache = cache_mod.Cache(operator, [namespace], watch_timeout=2)
    gadgets = controller_mod.Controller(ConfiguredGadgets, operator, cache, workers=1, reconcile=core.reconcile)
    others = controller_mod.Controller(Secrets, operator, cache, workers=1, reconcile=secrets_reconcile)
    make_gadget("g", size=1)
    try:
        for controller in (gadgets, others):
            controller.watch()
        assert cache.wait_for_sync(30)
        for controller in (gadgets, others):
            controller.start_workers()
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=30,
            message="the first reconcile",
        )
        assert kube.get_or_none(kinds.CONFIG_MAP, "g-config", namespace) is not None

        # The operator may still read and write ConfigMaps one by one, but no longer list or watch them.
        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_WRITES])
        (informer,) = cache.informers(kinds.CONFIG_MAP)
        wait_for(lambda: informer.reconnects >= 1, timeout=30, message="the refused watch of ConfigMaps")
        kube.delete(kinds.CONFIG_MAP, "g-config", namespace)  # the informer cannot see it go
        reconciled = gadgets.processed
        kube.patch(gadget_kind, "g", {"metadata": {"labels": {"looked-at": "again"}}}, namespace)
        kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": namespace}}, SECRET)

        wait_for(lambda: gadgets.processed > reconciled, timeout=30, message="the reconcile of the change")
        wait_for(lambda: secrets_reconcile.count("s") >= 1, timeout=30, message="the other controller's reconcile")
        refused = ready(kube, gadget_kind, namespace, 1)
        assert refused is not None
        assert refused["status"] == "False", refused
        assert "ConfigMap" in refused["message"] and "watch" in refused["message"], refused

        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_RULE])
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=60,
            message="the reconcile once the rule is back",
        )
        assert kube.get_or_none(kinds.CONFIG_MAP, "g-config", namespace) is not None
    finally:
        for controller in (gadgets, others):
            controller.shutdown(5)
        cache.stop()


def test_a_reconcile_that_failed_on_a_refused_watch_is_retried_once_the_watch_is_answered_again(
    kube: kube_client.Client, operator: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, make_gadget: Any
) -> None:
    """Nothing of the refused kind changed meanwhile, so no event wakes the owner: the backoff its failed reconciles
    climbed (an hour here: without the retry the key would not be reconciled again within the test) is not waited
    out once the API server answers the watch again."""
    cache = cache_mod.Cache(operator, [namespace], watch_timeout=2)
    hour = backoff_mod.Backoff(base=3600.0, cap=3600.0, jitter=0.0)
    gadgets = controller_mod.Controller(ConfiguredGadgets, operator, cache, workers=1, backoff=hour)
    make_gadget("g", size=1)
    try:
        gadgets.watch()
        assert cache.wait_for_sync(30)
        gadgets.start_workers()
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=30,
            message="the first reconcile",
        )
        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_WRITES])
        (informer,) = cache.informers(kinds.CONFIG_MAP)
        wait_for(lambda: informer.refusal is not None, timeout=30, message="the refused watch of ConfigMaps")
        kube.patch(gadget_kind, "g", {"metadata": {"labels": {"looked-at": "again"}}}, namespace)
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "False",
            timeout=30,
            message="the reconcile failing on the refusal",
        )
        # The condition is written inside the reconcile, the failure counted once it returned.
        wait_for(lambda: gadgets.queue.failures((namespace, "g")) >= 1, timeout=10, message="the failure counted")

        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_RULE])
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=60,
            message="the retry once the watch is answered again",
        )
        wait_for(lambda: gadgets.queue.failures((namespace, "g")) == 0, timeout=10, message="the failures forgotten")
    finally:
        gadgets.shutdown(5)
        cache.stop()


def level_of(cm: dict[str, Any]) -> dict[str, str] | None:
    data = cm.get("data") or {}
    return {okt.ref_of(cm): data["level"]} if "level" in data else None


class IndexReadingGadgets(okt.Reconciler):
    """Gadgets whose reconcile reads the index of the ConfigMaps whole (owning none: no other read of them)."""

    api_version = f"{runtime.GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    watches = (okt.watch("configmaps", indexes={"levels": level_of}),)
    seen: ClassVar[list[dict[str, Any]]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        super().enter_in_state(state, ctx)
        if state is okt.State.ObjectsGetter:
            self.seen.append(dict(ctx.indexed("levels")))


def test_an_index_of_a_kind_whose_watch_is_refused_fails_the_reconcile_that_reads_it_rather_than_answer_stale(
    kube: kube_client.Client, operator: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, make_gadget: Any
) -> None:
    """The index is kept from the watch as the store is: once the watch is refused, a ConfigMap deleted meanwhile
    stays in it, as in the store, which every other read of the kind refuses to answer from."""
    IndexReadingGadgets.seen = []
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": namespace},
            "data": {"level": "info"},
        },
        kinds.CONFIG_MAP,
    )
    cache = cache_mod.Cache(operator, [namespace], watch_timeout=2)
    gadgets = controller_mod.Controller(IndexReadingGadgets, operator, cache, workers=1)
    make_gadget("g", size=1)
    try:
        gadgets.watch()
        assert cache.wait_for_sync(30)
        gadgets.start_workers()
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=30,
            message="the first reconcile",
        )
        assert IndexReadingGadgets.seen[-1] == {f"{namespace}/c": ("info",)}

        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_WRITES])
        (informer,) = cache.informers(kinds.CONFIG_MAP)
        wait_for(lambda: informer.refusal is not None, timeout=30, message="the refused watch of ConfigMaps")
        kube.delete(kinds.CONFIG_MAP, "c", namespace)  # the informer cannot see it go
        kube.patch(gadget_kind, "g", {"metadata": {"labels": {"looked-at": "again"}}}, namespace)

        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "False",
            timeout=30,
            message="the reconcile failing on the refusal, not reading the deleted ConfigMap in the index",
        )
        refused = ready(kube, gadget_kind, namespace, 1)
        assert refused is not None
        assert "ConfigMap" in refused["message"] and "watch" in refused["message"], refused
    finally:
        gadgets.shutdown(5)
        cache.stop()


def test_a_kind_refused_before_the_first_sync_is_named_by_readiness_and_the_controllers_not_reading_it_start(
    kube: kube_client.Client,
    operator: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    """As with the permission check skipped: the role lacks list and watch on ConfigMaps from the start."""
    set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_WRITES])
    secrets_reconcile = fake_reconcile()
    kube.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": namespace}}, SECRET)
    make_gadget("g", size=1)
    manager = manager_mod.Manager(
        operator,
        [ConfiguredGadgets, Secrets],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=5.0,
        tune_memory=False,
        reconcile=lambda reconciler, *args, **kwargs: (
            secrets_reconcile if isinstance(reconciler, Secrets) else core.reconcile
        )(reconciler, *args, **kwargs),
    )
    try:
        with structlog.testing.capture_logs() as logged:
            manager.start()
            wait_for(lambda: secrets_reconcile.count("s") >= 1, timeout=30, message="the other controller's reconcile")
            is_ready, reason = manager.readiness()
            assert not is_ready
            assert "ConfigMap" in reason and "grant list and watch on configmaps" in reason, reason
            assert reason.startswith(running_guide_example(namespace)), reason
            assert ready_condition_absent(kube, gadget_kind, namespace)
        named = [e for e in logged if "grant list and watch on configmaps" in str(e.get("error", ""))]
        assert named and named[0]["log_level"] == "warning", logged

        set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_RULE])
        wait_for(
            lambda: (ready(kube, gadget_kind, namespace, 1) or {}).get("status") == "True",
            timeout=60,
            message="the reconcile once the rule is granted",
        )
        assert manager.readiness() == (True, "ok")
    finally:
        manager.stop()
        manager.join(15)


def running_guide_example(namespace: str) -> str:
    """The beginning of the reason the Running guide quotes for a kind whose list is refused (in namespace shop), for
    ``namespace``: what an operator author looks for in ``/readyz``'s answer (after its ``not ready: ``)."""
    page = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "running.md"
    found = re.search(r"`not ready: (caches not synced: [^`]*?) \.\.\.`", " ".join(page.read_text().split()))
    assert found, "the Running guide no longer quotes /readyz for a refused kind"
    return found.group(1).replace("namespace shop", f"namespace {namespace}")


def ready_condition_absent(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> bool:
    return condition(kube.get_or_none(kind, "g", namespace), "Ready") is None


GADGET_READS_ONLY = [
    {"apiGroups": [runtime.GROUP], "resources": ["gadgets"], "verbs": ["get", "update", "patch"]},
    *GADGET_RULES[1:],
]


class FollowedGadgets(okt.Reconciler):
    """Gadgets whose daemon records ``("started", name)`` when it starts and ``("stopped", name)`` after its loop."""

    api_version = f"{runtime.GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    lived: ClassVar[list[tuple[str, str]]] = []

    @okt.daemon
    def follow(self, ctx: okt.DaemonContext) -> None:
        self.lived.append(("started", ctx.name))
        while not ctx.stop.wait(0.1):
            pass
        self.lived.append(("stopped", ctx.name))


def test_the_daemons_of_a_kind_whose_watch_is_refused_stop_and_start_again_from_the_list_once_granted(
    kube: kube_client.Client,
    operator: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    """What the cache holds of a refused kind is as old as the refusal: the daemons ran on from it, and one whose object
    was deleted meanwhile ran until the rule was back. Once it is, the list that answers decides which start again."""
    FollowedGadgets.lived = []
    lived = FollowedGadgets.lived
    cache = cache_mod.Cache(operator, [namespace], watch_timeout=2)
    gadgets = controller_mod.Controller(FollowedGadgets, operator, cache, workers=1, reconcile=fake_reconcile())
    make_gadget("deleted", size=1)
    make_gadget("kept", size=1)
    try:
        with structlog.testing.capture_logs() as logged:
            gadgets.watch()
            assert cache.wait_for_sync(30)
            gadgets.start_workers()
            wait_for(lambda: len(lived) == 2, timeout=30, message=lambda: f"the daemons started: {lived}")

            set_rules(kube, namespace, GADGET_READS_ONLY)
            # The watch open then ends within two seconds, the next is refused: a few seconds, not until the rule
            # is back.
            wait_for(
                lambda: {("stopped", "deleted"), ("stopped", "kept")} <= set(lived),
                timeout=20,
                message=lambda: f"the daemons stopped once the watch of Gadgets is refused: {lived}",
            )
            (informer,) = cache.informers(gadget_kind)
            assert informer.refusal is not None
            kube.delete(gadget_kind, "deleted", namespace)  # the informer cannot see it go

            set_rules(kube, namespace, GADGET_RULES)
            wait_for(
                lambda: lived.count(("started", "kept")) == 2,
                timeout=60,
                message=lambda: f"the daemon of the object still there started again: {lived}",
            )
            wait_for(
                lambda: cache.get(gadget_kind, "deleted", namespace) is None,
                timeout=10,
                message="the deletion told",
            )
            time.sleep(1)  # a start of the deleted object's daemon, were there one, has come by now
            running = gadgets.daemons.running()
    finally:
        gadgets.shutdown(5)
        cache.stop()

    assert lived.count(("started", "deleted")) == 1, lived
    assert running == [(namespace, "kept", "follow")]
    said = [entry["event"] for entry in logged if str(entry.get("event")).endswith(("to stop", "start again"))]
    assert said == [
        "the API server refuses okt the list or watch of the kind: its daemons are asked to stop",
        "the API server lets okt list and watch the kind again: its daemons start again",
    ], said


class ProbedGadgets(okt.Reconciler):
    """Gadgets whose daemon states ``Probed`` and returns, done for its object, once ``done`` is set."""

    api_version = f"{runtime.GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    done = threading.Event()

    @okt.daemon
    def probe(self, ctx: okt.DaemonContext) -> None:
        ctx.set_condition("Probed", True, "Answers")
        while not ctx.stop.wait(0.1):
            if self.done.is_set():
                return


def probed(kube: kube_client.Client, kind: kinds.Kind, namespace: str) -> dict[str, Any] | None:
    return condition(kube.get_or_none(kind, "g", namespace), "Probed")


def refuses_status_writes(client: kube_client.Client, kind: kinds.Kind, namespace: str) -> bool:
    """Whether the API server refuses ``client`` a (no-op) write of the Gadget's status."""
    try:
        client.patch(kind, "g", {}, namespace, subresource="status")
    except errors.Forbidden:
        return True
    return False


def test_what_a_daemon_done_for_its_object_stated_leaves_the_status_once_a_refusal_of_its_kind_is_lifted(
    kube: kube_client.Client, operator: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, make_gadget: Any
) -> None:
    """The daemon returned on its own while the status could not be written (the Role lost ``gadgets/status``), so
    the reconcile asked to remove its condition failed; then the list and watch of Gadgets were refused too. Once all
    is granted again, that reconcile removes it: the suspension dropped it, and the condition stayed for good (the
    object's record keeps what a daemon still declared stated; done, it never states anything again)."""
    ProbedGadgets.done.clear()
    cache = cache_mod.Cache(operator, [namespace], watch_timeout=2)
    gadgets = controller_mod.Controller(ProbedGadgets, operator, cache, workers=1)
    make_gadget("g", size=1)
    no_status = [rule for rule in GADGET_RULES if "gadgets/status" not in rule["resources"]]
    try:
        gadgets.watch()
        assert cache.wait_for_sync(30)
        gadgets.start_workers()
        wait_for(lambda: probed(kube, gadget_kind, namespace) is not None, timeout=30, message="Probed written")

        set_rules(kube, namespace, no_status)
        wait_for(lambda: refuses_status_writes(operator, gadget_kind, namespace), timeout=30, message="refused")
        ProbedGadgets.done.set()
        wait_for(lambda: gadgets.daemons.running() == [], timeout=10, message="the daemon returned")
        wait_for(lambda: gadgets.queue.failures((namespace, "g")) >= 1, timeout=30, message="the removal failed")

        set_rules(kube, namespace, [rule for rule in GADGET_READS_ONLY if "gadgets/status" not in rule["resources"]])
        (informer,) = cache.informers(gadget_kind)
        wait_for(lambda: informer.refusal is not None, timeout=30, message="the refused watch of Gadgets")
        still = probed(kube, gadget_kind, namespace)

        set_rules(kube, namespace, GADGET_RULES)
        wait_for(lambda: informer.refusal is None, timeout=60, message="the watch of Gadgets answered again")
        wait_for(
            lambda: probed(kube, gadget_kind, namespace) is None,
            timeout=30,
            message=lambda: f"Probed removed: {probed(kube, gadget_kind, namespace)}",
        )
        running = gadgets.daemons.running()
    finally:
        gadgets.shutdown(5)
        cache.stop()

    assert still is not None  # the removal could not be written before the suspension
    assert running == []  # done for its object: not started again by the resumption


@pytest.fixture
def other_namespace(kube: kube_client.Client, namespace: str) -> Iterator[str]:
    """A second namespace where the operator's ServiceAccount (of ``namespace``) has a Role of its own."""
    name = f"okt-other-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    role = {
        "apiVersion": ROLE.api_version,
        "kind": "Role",
        "metadata": {"name": ACCOUNT, "namespace": name},
        "rules": GADGET_RULES,
    }
    kube.create(role, ROLE)
    binding = {
        "apiVersion": BINDING.api_version,
        "kind": "RoleBinding",
        "metadata": {"name": ACCOUNT, "namespace": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
    }
    kube.create(binding, BINDING)
    yield name
    kube.delete(kinds.NAMESPACE, name)


def test_a_refusal_in_one_watched_namespace_stops_the_daemons_there_and_those_of_the_other_namespaces_run_on(
    kube: kube_client.Client,
    operator: kube_client.Client,
    namespace: str,
    other_namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    fake_reconcile: Any,
) -> None:
    """``okt run -n A -n B`` lists and watches each namespace on its own: the Role taken away in one says nothing of
    the other, whose watch still answers and whose daemons work from a cache as fresh as ever."""
    FollowedGadgets.lived = []
    lived = FollowedGadgets.lived
    cache = cache_mod.Cache(operator, [namespace, other_namespace], watch_timeout=2)
    gadgets = controller_mod.Controller(FollowedGadgets, operator, cache, workers=1, reconcile=fake_reconcile())
    make_gadget("refused", size=1)
    elsewhere = {
        "apiVersion": gadget_kind.api_version,
        "kind": gadget_kind.kind,
        "metadata": {"name": "elsewhere", "namespace": other_namespace},
        "spec": {"size": 1},
    }
    kube.create(elsewhere, gadget_kind)
    try:
        with structlog.testing.capture_logs() as logged:
            gadgets.watch()
            assert cache.wait_for_sync(30)
            gadgets.start_workers()
            wait_for(lambda: len(lived) == 2, timeout=30, message=lambda: f"the daemons started: {lived}")

            set_rules(kube, namespace, GADGET_READS_ONLY)
            wait_for(
                lambda: ("stopped", "refused") in lived,
                timeout=20,
                message=lambda: f"the daemon stopped once the watch of Gadgets in {namespace} is refused: {lived}",
            )
            by_namespace = {informer.namespace: informer for informer in cache.informers(gadget_kind)}
            assert by_namespace[namespace].refusal is not None
            assert by_namespace[other_namespace].refusal is None
            # A Gadget made in the namespace still watched gets its daemon while the other is refused.
            kube.create({**elsewhere, "metadata": {"name": "later", "namespace": other_namespace}}, gadget_kind)
            wait_for(lambda: ("started", "later") in lived, timeout=20, message=lambda: f"the later daemon: {lived}")
            time.sleep(1)  # a stop of the daemon elsewhere, were there one, has come by now
            during = gadgets.daemons.running()

            set_rules(kube, namespace, GADGET_RULES)
            wait_for(
                lambda: lived.count(("started", "refused")) == 2,
                timeout=60,
                message=lambda: f"the daemon of the namespace granted again started again: {lived}",
            )
            running = gadgets.daemons.running()
            seen = list(lived)
    finally:
        gadgets.shutdown(5)
        cache.stop()

    assert ("stopped", "elsewhere") not in seen, seen
    assert seen.count(("started", "elsewhere")) == 1, seen
    assert during == [(other_namespace, "elsewhere", "follow"), (other_namespace, "later", "follow")]
    assert sorted(running) == sorted(
        [
            (namespace, "refused", "follow"),
            (other_namespace, "elsewhere", "follow"),
            (other_namespace, "later", "follow"),
        ]
    )
    said = [
        (entry["event"], entry.get("namespace"), entry["daemons"])
        for entry in logged
        if str(entry.get("event")).endswith(("to stop", "start again"))
    ]
    assert said == [
        ("the API server refuses okt the list or watch of the kind: its daemons are asked to stop", namespace, 1),
        ("the API server lets okt list and watch the kind again: its daemons start again", namespace, 1),
    ], said


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def refuses_listing(client: kube_client.Client, namespace: str) -> bool:
    """Whether the API server refuses ``client`` the list of ConfigMaps (RBAC's own cache of the roles has seen the
    rule go)."""
    try:
        client.request("GET", f"/api/v1/namespaces/{namespace}/configmaps", verb="list", resource="configmaps")
    except errors.Forbidden:
        return True
    return False


def test_a_kind_refused_after_the_sync_is_named_by_readiness_as_an_unserved_one_is(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    operator_kubeconfig: pathlib.Path,
    namespace: str,
    make_gadget: Any,
    fake_reconcile: Any,
    tmp_path: pathlib.Path,
) -> None:
    """A kind the API server stops serving is named in ``/readyz``'s body (still 200: the pod serves every other
    kind); one whose list and watch it starts refusing is treated alike — its reads fail, its daemons stop — but
    ``/readyz`` answered a bare ``ok``: nothing an operator looking at the pod could see."""
    make_gadget("g", size=1)
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(operator_kubeconfig, tmp_path / "kubeconfig"))
        manager = manager_mod.Manager(
            client,
            [ConfiguredGadgets],
            reconcile=fake_reconcile(),
            namespaces=[namespace],
            metrics_bind="127.0.0.1:0",
            grace_period=5,
        )
        try:
            manager.start()
            assert manager.probes is not None
            url = manager.probes.url + "/readyz"
            wait_for(lambda: fetch(url) == (200, "ok"), timeout=30)

            set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_WRITES])
            wait_for(lambda: refuses_listing(client, namespace), timeout=10, message="the rule taken away")
            with proxy.restarting(not_served=()):  # the watches cut: the next one is refused
                pass
            wait_for(lambda: fetch(url)[1] != "ok", timeout=30, message="readiness naming the refused kind")
            status, body = fetch(url)
            assert status == 200  # Gadgets are still reconciled, and their reads of ConfigMaps fail saying so
            assert body.startswith(
                f"ok (403 Forbidden: okt may no longer list and watch ConfigMap (v1) in namespace {namespace}, so "
                "what it holds of them may be stale: grant list and watch on configmaps"
            ), body

            set_rules(kube, namespace, [*GADGET_RULES, CONFIG_MAP_RULE])
            wait_for(lambda: fetch(url) == (200, "ok"), timeout=60, message="readiness once the rule is back")
        finally:
            manager.stop()
            manager.join(15)
            client.close()
