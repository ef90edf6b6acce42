"""Children that are no longer wanted, and children someone else writes concurrently.

Pruning is okt's job: a child carrying the owner label but no longer registered is deleted, anything else is left
alone. A 409 on a guarded update is reported as a fast retry, and the next reconcile converges. (Garbage collection
of a deleted owner's children is in ``test_owner_deletion``.)
"""

from __future__ import annotations

import base64
from collections.abc import Container, Mapping
from typing import Any

import pytest

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import children, core
from okt.testing import condition, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
other_client = shared.other_client

NAME = "demo"
CHILDREN = (
    ("v1", "ConfigMap", f"{NAME}-config"),
    ("v1", "Service", NAME),
    ("apps/v1", "Deployment", NAME),
)


class WithoutService(shared.WidgetReconciler):
    """The Widget reconciler after its author dropped the Service from ``resources()``."""

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [res for res in super().resources(ctx) if not isinstance(res, shared.WidgetService)]


class WithoutConfigAndService(shared.WidgetReconciler):
    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [res for res in super().resources(ctx) if isinstance(res, shared.WidgetDeployment)]


class InterferedReconciler(shared.WidgetReconciler):
    """Another writer annotates the ConfigMap after okt read it and before okt updates it (once).

    With the merge strategy the update okt then sends carries a stale resourceVersion: the API server answers 409.
    An apply carries no resourceVersion: the server merges it field by field over the other writer's change.
    """

    def __init__(self, other: kube_client.Client, strategy: str = "merge") -> None:
        self.apply_strategy = strategy
        self.other = other
        self.interferences = 0

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and not self.interferences:
            config = next(res for res in ctx.registry if res.kind == "ConfigMap")
            assert config.live is not None, "ObjectsGetter read it"
            patch = {"metadata": {"annotations": {"example.com/touched-by": "backup-controller"}}}
            touched = self.other.patch(
                kinds.CONFIG_MAP, config.name, patch, config.namespace, field_manager="backup-controller"
            )
            assert touched["metadata"]["resourceVersion"] != config.live["metadata"]["resourceVersion"]
            self.interferences += 1
        super().enter_in_state(state, ctx)


@pytest.mark.parametrize(
    ("reconciler", "pruned"),
    [
        pytest.param(WithoutService(), {("delete", "services"): 1}, id="service"),
        pytest.param(
            WithoutConfigAndService(), {("delete", "services"): 1, ("delete", "configmaps"): 1}, id="config-and-service"
        ),
    ],
)
def test_a_child_removed_from_resources_is_pruned(
    kube: kube_client.Client,
    namespace: str,
    widget_kind: kinds.Kind,
    reconciler: okt.Reconciler,
    pruned: dict[tuple[str, str], int],
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    # The prune, and the status write that takes the pruned children out of status.relatedObjects.
    assert shared.write_requests(kube, before) == {**pruned, ("apply", "widgets/status"): 1}
    assert run.results.counts()[okt.Operation.PRUNED] == sum(pruned.values())
    gone = {plural for _, plural in pruned}
    for api_version, kind_name, name in CHILDREN:
        plural = kube.resolve(api_version, kind_name).plural
        if plural in gone:
            waiting.wait_for(
                lambda a=api_version, k=kind_name, n=name: shared.get_child(kube, a, k, namespace, n) is None,
                message=f"{kind_name}/{name} pruned",
            )
        else:
            assert shared.get_child(kube, api_version, kind_name, namespace, name) is not None
    steady = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, steady) == {}


def test_an_object_without_our_owner_label_is_never_pruned(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    bystander = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bystander", "namespace": namespace, "labels": {"app": NAME}},
        "spec": {"ports": [{"port": 80}]},
    }
    other_client.create(bystander, kube.resolve("v1", "Service"))
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(WithoutService(), kube, widget_kind, namespace, NAME)

    assert shared.write_requests(kube, before) == {("delete", "services"): 1, ("apply", "widgets/status"): 1}
    assert run.results.counts()[okt.Operation.PRUNED] == 1
    assert shared.get_child(kube, "v1", "Service", namespace, "bystander") is not None


def test_a_concurrent_update_ends_in_a_fast_retry_and_the_next_reconcile_converges_with_the_merge_strategy(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting="hello")
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, greeting="bonjour")
    reconciler = InterferedReconciler(other_client)
    before = kube.stats.snapshot()

    conflicted = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert reconciler.interferences == 1
    assert conflicted.path_str == ">CRChecker>ObjectsGetter>Mutator>Updater>ErrorManager>End"
    assert conflicted.outcome.kind is okt.OutcomeKind.RETRY
    assert isinstance(conflicted.outcome.error, errors.Conflict)
    assert conflicted.outcome.delay == children.CONFLICT_DELAY
    # One refused update, no second blind attempt in the same reconcile; the status says Ready=False.
    assert shared.write_requests(kube, before) == {("patch", "configmaps"): 1, ("patch", "widgets/status"): 1}
    stale = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert stale is not None
    assert stale["data"]["greeting"] == "hello"
    not_ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert not_ready is not None
    assert (not_ready["status"], not_ready["reason"]) == ("False", "ApiError")

    converged = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert converged.outcome == okt.Outcome.done()
    assert reconciler.interferences == 1
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert config is not None
    assert config["data"]["greeting"] == "bonjour"
    assert config["metadata"]["annotations"]["example.com/touched-by"] == "backup-controller"
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None
    assert ready["status"] == "True"
    steady = kube.stats.snapshot()
    shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)
    assert shared.write_requests(kube, steady) == {}


def test_a_concurrent_update_is_merged_by_the_apply_in_the_same_reconcile(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting="hello")
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, greeting="bonjour")
    reconciler = InterferedReconciler(other_client, strategy="apply")
    before = kube.stats.snapshot()

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert reconciler.interferences == 1
    assert run.outcome == okt.Outcome.done()
    assert shared.write_requests(kube, before) == {("apply", "configmaps"): 1, ("apply", "widgets/status"): 1}
    config = shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config")
    assert config is not None
    assert config["data"]["greeting"] == "bonjour"
    assert config["metadata"]["annotations"]["example.com/touched-by"] == "backup-controller"


class WaitingConfig(shared.WidgetConfig):
    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        raise okt.TemporaryError("the settings service is not up yet", delay=7)


class RenamingConfig(shared.WidgetConfig):
    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["metadata"]["name"] = f"{cr.name}-renamed"


def reconciler_of(config: type[okt.Resource]) -> okt.Reconciler:
    class OneChild(shared.WidgetReconciler):
        owns = (config,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [config(ctx.cr)]

    return OneChild()


def test_a_temporary_error_raised_by_a_mutation_keeps_its_delay(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(reconciler_of(WaitingConfig), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    assert run.outcome.delay == 7


def test_a_mutation_that_renames_a_child_gives_up_alarmingly_without_requeue(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(reconciler_of(RenamingConfig), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert run.path_str.endswith(">Mutator>ErrorManager>GiveupManager>End")
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "MutateError")
    assert "may not change name/namespace" in ready["message"]
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-renamed") is None


class UnrenderableConfig(shared.WidgetConfig):
    """A template that reads an attribute the Widget's greeting (a string) does not have: it does not render."""

    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ name }}-config"
data:
  greeting: "{{ cr.spec.greeting.text }}"
"""


def test_a_template_that_does_not_render_gives_up_as_a_mutation_that_renames_its_child(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    """Both are a fault of the spec or of the operator's code that retrying cannot mend: reported once (Ready=False,
    reason MutateError, Stalled=True), then no retry and no write while the Widget does not change — a template that
    does not render was retried with backoff, each retry one more failure counted and written."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    reconciler = reconciler_of(UnrenderableConfig)

    run = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP
    stored = shared.get_widget(kube, widget_kind, namespace, NAME)
    ready, stalled = condition(stored, "Ready"), condition(stored, "Stalled")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "MutateError")
    assert "text" in ready["message"]
    assert stalled is not None and stalled["status"] == "True"
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, f"{NAME}-config") is None
    before = kube.stats.snapshot()

    again = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert again.outcome.kind is okt.OutcomeKind.GIVE_UP
    assert shared.write_requests(kube, before) == {}  # reported once: the object did not change


class UndeclaredService(shared.WidgetReconciler):
    """Registers a Service, but owns only the ConfigMap class: okt would neither watch the Service nor grant it."""

    owns = (shared.WidgetConfig,)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr), shared.WidgetService(ctx.cr)]


def test_a_child_of_a_kind_the_reconciler_does_not_own_is_refused_with_the_fix(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(UndeclaredService(), kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.GIVE_UP  # the same code would do it again: reported once
    assert isinstance(run.results.first_error, errors.RegistrationError)
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "RegistrationAborted")
    assert "Service" in ready["message"] and "does not own" in ready["message"]
    assert "add its resource class WidgetService to the reconciler's owns" in ready["message"]
    assert shared.get_child(kube, "v1", "Service", namespace, NAME) is None


class WidgetAutoscaler(okt.MutableResource):
    api_version = "autoscaling/v2beta2"
    kind = "HorizontalPodAutoscaler"
    template = """
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ name }}
  namespace: {{ namespace }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ name }}
  minReplicas: 1
  maxReplicas: 3
"""


class WidgetAutoscalerV1(WidgetAutoscaler):
    """The same child for servers that serve only ``autoscaling/v1``."""

    api_version = "autoscaling/v1"
    template = WidgetAutoscaler.template.replace("autoscaling/v2beta2", "autoscaling/v1")


class EitherAutoscaler(shared.WidgetReconciler):
    """Owns the autoscaler in both versions the server serves, and declares it in one of them."""

    owns = (WidgetAutoscalerV1, WidgetAutoscaler)

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [WidgetAutoscaler(ctx.cr)]


def test_a_declared_child_is_not_pruned_as_seen_through_another_version_of_its_kind(
    kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)

    run = shared.reconcile_widget(EitherAutoscaler(), kube, widget_kind, namespace, NAME)

    assert run.outcome == okt.Outcome.done()
    assert run.results.counts()[okt.Operation.PRUNED] == 0
    assert shared.get_child(kube, "autoscaling/v2beta2", "HorizontalPodAutoscaler", namespace, NAME) is not None


class OnlyConfig(shared.WidgetReconciler):
    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [shared.WidgetConfig(ctx.cr)]


def test_a_child_being_deleted_keeps_its_owner_not_ready_and_is_created_again_once_gone(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    rec = OnlyConfig()
    assert shared.reconcile_widget(rec, kube, widget_kind, namespace, NAME).outcome == okt.Outcome.done()
    config = f"{NAME}-config"
    held = {"metadata": {"finalizers": ["test.okt.io/hold"]}}
    other_client.patch(kinds.CONFIG_MAP, config, held, namespace)
    other_client.delete(kinds.CONFIG_MAP, config, namespace)

    run = shared.reconcile_widget(rec, kube, widget_kind, namespace, NAME)

    assert run.outcome.kind is okt.OutcomeKind.RETRY
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and ready["status"] == "False"
    assert f"ConfigMap/{namespace}/{config}" in ready["message"] and "being deleted" in ready["message"]

    other_client.patch(kinds.CONFIG_MAP, config, {"metadata": {"finalizers": None}}, namespace)
    waiting.wait_for(lambda: shared.get_child(kube, "v1", "ConfigMap", namespace, config) is None)
    assert shared.reconcile_widget(rec, kube, widget_kind, namespace, NAME).outcome == okt.Outcome.done()
    assert shared.get_child(kube, "v1", "ConfigMap", namespace, config) is not None
    ready = condition(shared.get_widget(kube, widget_kind, namespace, NAME), "Ready")
    assert ready is not None and ready["status"] == "True"


class Behind(core.ApiReader):
    """A reader whose lists of children lag behind the API server, as an informer's store does until the watch
    delivers the latest writes: each kind is listed once, and that answer is kept."""

    def __init__(self, client: kube_client.Client) -> None:
        super().__init__(client)
        self.seen: dict[tuple[str, str, str | None], list[dict[str, Any]]] = {}

    def owned(
        self,
        kind: kinds.Kind,
        namespace: str | None,
        owner_uid: str,
        labels: Mapping[str, str],
        skip: Container[tuple[str, str]] = (),
    ) -> list[dict[str, Any]]:
        key = (kind.api_version, kind.kind, namespace)
        if key not in self.seen:
            self.seen[key] = super().owned(kind, namespace, owner_uid, labels)
        return [obj for obj in self.seen[key] if kinds.key_of(obj)[2:] not in skip]


def test_a_child_another_controller_adopted_since_okt_read_it_is_not_pruned(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind
) -> None:
    owner = shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    shared.reconcile_widget(shared.WidgetReconciler(), kube, widget_kind, namespace, NAME)
    reader = Behind(kube)
    service = kube.resolve("v1", "Service")
    uid = owner["metadata"]["uid"]
    assert [obj["metadata"]["name"] for obj in reader.owned(service, namespace, uid, {"okt.io/owner-uid": uid})] == [
        NAME
    ]
    adopter = other_client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "adopter", "namespace": namespace}},
        kinds.CONFIG_MAP,
    )
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "adopter", "uid": adopter["metadata"]["uid"]}
    other_client.patch(service, NAME, {"metadata": {"ownerReferences": [{**reference, "controller": True}]}}, namespace)

    run = okt.reconcile(WithoutService(), kube, reader, namespace, NAME, kind=widget_kind)

    assert shared.get_child(kube, "v1", "Service", namespace, NAME) is not None
    assert run.results.counts()[okt.Operation.PRUNED] == 0
    assert run.outcome == okt.Outcome.done()


class GeneratedSecret(okt.SecretResource):
    """A Secret whose password is generated once (initial data): an update keeps the live one."""

    template = """
apiVersion: v1
kind: Secret
metadata:
  name: {{ name }}-credentials
  namespace: {{ namespace }}
stringData:
  user: admin-{{ cr.spec.size }}
"""

    def mutate_with_initial_data(self) -> None:
        self.desired.setdefault("stringData", {})["password"] = "generated"


class ReplacedReconciler(shared.WidgetReconciler):
    """Someone deletes the Secret okt read and creates another of its name, with a password of its own, after okt
    decided to update it and before okt writes (once)."""

    owns = (GeneratedSecret,)

    def __init__(self, other: kube_client.Client, strategy: str) -> None:
        self.apply_strategy = strategy
        self.other = other
        self.replaced: dict[str, Any] | None = None

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [GeneratedSecret(ctx.cr)]

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and self.replaced is None:
            (secret,) = ctx.registry
            assert secret.live is not None, "ObjectsGetter read it"
            secrets = self.other.resolve("v1", "Secret")
            self.other.delete(secrets, secret.name, secret.namespace)
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret.name, "namespace": secret.namespace},
                "stringData": {"password": "theirs"},
            }
            self.replaced = self.other.create(body, secrets)
        super().enter_in_state(state, ctx)


def _secret_data(kube: kube_client.Client, namespace: str) -> dict[str, str]:
    secret = shared.get_child(kube, "v1", "Secret", namespace, f"{NAME}-credentials")
    assert secret is not None
    return {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}


@pytest.mark.parametrize("strategy", ["apply", "merge"])
def test_a_child_deleted_and_created_again_since_okt_read_it_is_not_written_from_what_okt_read(
    kube: kube_client.Client, other_client: kube_client.Client, namespace: str, widget_kind: kinds.Kind, strategy: str
) -> None:
    """The update okt decided for the object it read is refused on the one created again under its name (a fast
    retry); the next reconcile decides from that object, and keeps its password as initial data."""
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    reconciler = ReplacedReconciler(other_client, strategy)
    reconciler.replaced = {}  # the first reconcile creates the Secret undisturbed
    assert shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME).outcome == okt.Outcome.done()
    assert _secret_data(kube, namespace) == {"user": "admin-1", "password": "generated"}
    shared.patch_widget_spec(kube, widget_kind, namespace, NAME, size=2)
    reconciler.replaced = None

    refused = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert isinstance(refused.outcome.error, errors.Conflict), refused.results.summary()
    assert refused.outcome.delay == children.CONFLICT_DELAY
    assert _secret_data(kube, namespace) == {"password": "theirs"}  # nothing of okt's landed on it

    converged = shared.reconcile_widget(reconciler, kube, widget_kind, namespace, NAME)

    assert converged.outcome == okt.Outcome.done(), converged.results.summary()
    assert _secret_data(kube, namespace) == {"user": "admin-2", "password": "theirs"}
