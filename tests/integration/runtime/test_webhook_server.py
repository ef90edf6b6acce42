"""Admission webhooks on the real API server: it calls the operator on loopback (``clientConfig.url`` with the
generated CA), ``kubectl apply`` of a bad spec fails with the field path, a default lands on the stored object, a
standby replica answers too, and with the operator down the configured ``failurePolicy`` decides."""

from __future__ import annotations

import contextlib
import datetime
import json
import pathlib
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import pydantic
import pytest
import structlog.testing

import okt
from okt import errors
from okt.codegen import crd, webhooks
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import admission
from okt.runtime import manager as manager_mod
from okt.runtime import webhook_server
from okt.testing import envtest, kubectl, wait_for

pytestmark = pytest.mark.integration

GROUP = "admission.okt.example.com"
VALIDATING = kinds.Kind(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)
MUTATING = kinds.Kind(
    "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", namespaced=False
)
CONFIGURATION_KINDS = {"ValidatingWebhookConfiguration": VALIDATING, "MutatingWebhookConfiguration": MUTATING}


class GadgetSpec(pydantic.BaseModel):
    image: str
    displayName: str | None = None  # noqa: N815 - the field's name in the API

    @pydantic.field_validator("image")
    @classmethod
    def tagged(cls, image: str) -> str:
        if ":" not in image:  # a rule no CRD schema can say: only the webhook refuses it
            raise ValueError("an image needs a tag")
        return image


class Gadgets(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Gadget"
    plural = "gadgets"
    spec_model = GadgetSpec

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        obj["spec"].setdefault("displayName", f"gadget {obj['metadata']['name']}")
        return obj


@pytest.fixture(scope="module")
def gadget_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crd.crd_for_reconciler(Gadgets))
    return kind


def gadget(namespace: str, name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": Gadgets.api_version,
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"image": image},
    }


def install(kube: kube_client.Client, documents: list[dict[str, Any]]) -> list[tuple[kinds.Kind, str]]:
    installed = []
    for document in documents:
        kind = CONFIGURATION_KINDS[document["kind"]]
        kube.create(document, kind)
        installed.append((kind, document["metadata"]["name"]))
    return installed


@pytest.fixture
def configure(kube: kube_client.Client) -> Iterator[Any]:
    """Install webhook configurations for Gadgets calling ``url``; removed after the test."""
    installed: list[tuple[kinds.Kind, str]] = []

    def configure(
        url: str,
        ca_bundle: str,
        failure_policy: webhooks.FailurePolicy = "Fail",
        scope: admission.Scope = admission.EVERYTHING,
    ) -> str:
        name = f"gadgets-{secrets.token_hex(3)}"
        documents = webhooks.webhooks_for_reconcilers(
            [Gadgets],
            name=name,
            client_config=webhooks.ClientConfig(url=url, ca_bundle=ca_bundle),
            failure_policy=failure_policy,
            timeout=5,
            scope=scope,
        )
        installed.extend(install(kube, documents))
        return name

    yield configure
    for kind, name in installed:
        kube.delete(kind, name)


def apply(control_plane: envtest.ControlPlane, obj: Mapping[str, Any], directory: pathlib.Path) -> Any:
    manifest = directory / f"{obj['metadata']['name']}.json"
    manifest.write_text(json.dumps(obj))
    return kubectl.kubectl(control_plane.kubeconfig, "apply", "-f", str(manifest))


@contextlib.contextmanager
def serving(
    kube: kube_client.Client, namespace: str, reconciler: type[okt.Reconciler] = Gadgets
) -> Iterator[manager_mod.Manager]:
    """An operator of ``reconciler`` in ``namespace``, serving its webhooks on a free port; stopped after."""
    manager = manager_mod.Manager(
        kube,
        [reconciler],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=5,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    manager.start()
    try:
        yield manager
    finally:
        manager.stop()
        manager.join(10)


@pytest.fixture
def operator(kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind) -> Iterator[manager_mod.Manager]:
    with serving(kube, namespace) as manager:
        yield manager


def refused_by_webhook(
    kube: kube_client.Client, kind: kinds.Kind, namespace: str, name: str = "", **labels: str
) -> bool:
    """Whether the webhook refuses a gadget without a tag named ``name`` (else a probe's own) with ``labels``: whether
    the API server calls it yet (configurations reach it a moment after they are created), or calls it for that
    object. One that is admitted is deleted again."""
    name = name or f"probe-{secrets.token_hex(3)}"
    try:
        kube.create(labelled(gadget(namespace, name, "untagged"), **labels), kind)
    except okt.ApiError as exc:
        return "an image needs a tag" in str(exc)
    kube.delete(kind, name, namespace)
    return False


def test_kubectl_apply_of_a_bad_spec_fails_with_the_field_path_and_defaults_land(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    gadget_kind: kinds.Kind,
    operator: manager_mod.Manager,
    configure: Any,
    tmp_path: pathlib.Path,
) -> None:
    server = operator.webhook_server
    assert server is not None
    configure(server.url(), server.ca_bundle)
    wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")

    bad = apply(control_plane, gadget(namespace, "bad", "memcached"), tmp_path)
    assert bad.returncode != 0
    assert "spec.image: Value error, an image needs a tag (got 'memcached')" in bad.stderr
    assert kube.get_or_none(gadget_kind, "bad", namespace) is None

    good = apply(control_plane, gadget(namespace, "good", "memcached:1.6"), tmp_path)
    assert good.returncode == 0, good.stderr
    stored = kube.get(gadget_kind, "good", namespace)
    assert stored["spec"] == {"image": "memcached:1.6", "displayName": "gadget good"}

    # The API server's calls are on the operator's /metrics: the refusals (the probes' and the bad spec's) too.
    sample = operator.metrics.registry.get_sample_value
    validate, mutate = {"webhook": "/validate/gadget"}, {"webhook": "/mutate/gadget"}
    assert (sample("okt_webhook_reviews_total", {**validate, "verdict": "refused"}) or 0) >= 2
    assert (sample("okt_webhook_reviews_total", {**validate, "verdict": "allowed"}) or 0) >= 1
    assert (sample("okt_webhook_reviews_total", {**mutate, "verdict": "allowed"}) or 0) >= 2
    answered = sample("controller_runtime_webhook_requests_total", {**validate, "code": "200"}) or 0
    assert answered >= 3
    assert sample("controller_runtime_webhook_latency_seconds_count", validate) == answered


def test_a_standby_replica_serves_admission(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    lease = f"gadgets-{secrets.token_hex(3)}"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease, "namespace": namespace},
            "spec": {
                "holderIdentity": "the-leader",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        },
        kinds.LEASE,
    )
    standby = manager_mod.Manager(
        kube,
        [Gadgets],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=5,
        leader_elect=True,
        lease_namespace=namespace,
        lease_name=lease,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    standby.start()
    try:
        assert standby.webhook_server is not None
        configure(standby.webhook_server.url(), standby.webhook_server.ca_bundle)
        wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the standby refusing")
        assert not standby.working
    finally:
        standby.stop()
        standby.join(10)


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_with_the_operator_down_the_failure_policy_decides(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    operator: manager_mod.Manager,
    configure: Any,
    policy: webhooks.FailurePolicy,
) -> None:
    server = operator.webhook_server
    assert server is not None
    configure(server.url(), server.ca_bundle, policy)
    wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
    operator.stop()
    assert operator.join(10)

    if policy == "Fail":
        with pytest.raises(okt.ApiError, match="failed calling webhook"):
            kube.create(gadget(namespace, "while-down", "memcached:1.6"), gadget_kind)
        assert kube.get_or_none(gadget_kind, "while-down", namespace) is None
    else:
        kube.create(gadget(namespace, "while-down", "memcached"), gadget_kind)  # unjudged: even a bad spec
        stored = kube.get(gadget_kind, "while-down", namespace)
        assert stored["spec"] == {"image": "memcached"}  # and not defaulted


def test_a_bad_spec_is_refused_as_the_api_server_refuses_an_invalid_field(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    gadget_kind: kinds.Kind,
    operator: manager_mod.Manager,
    configure: Any,
    tmp_path: pathlib.Path,
) -> None:
    server = operator.webhook_server
    assert server is not None
    configure(server.url(), server.ca_bundle)
    wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")

    with pytest.raises(errors.Invalid) as refused:
        kube.create(gadget(namespace, "bad", "memcached"), gadget_kind)

    assert (refused.value.status, refused.value.api_reason) == (422, "Invalid")
    assert refused.value.causes == (
        errors.StatusCause("FieldValueInvalid", "Value error, an image needs a tag (got 'memcached')", "spec.image"),
    )
    assert "denied the request: spec.image: Value error, an image needs a tag" in refused.value.api_message
    by_kubectl = apply(control_plane, gadget(namespace, "bad", "memcached"), tmp_path)
    assert by_kubectl.returncode != 0
    # as kubectl says a field the CRD's schema refuses: the object, then each field and what is wrong with it
    assert by_kubectl.stderr == f'The Gadget "bad" is invalid: spec.image: {refused.value.causes[0].message}\n'


def _probe(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_both_probes_turn_503_naming_the_webhook_server_once_it_no_longer_serves(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind
) -> None:
    # The API server goes on calling a pod that reports ready: a pod whose webhook server is gone must not report
    # ready, and must be restarted (its liveness probe), or it stays out of its Service's endpoints for good.
    manager = manager_mod.Manager(
        kube,
        [Gadgets],
        namespaces=[namespace],
        metrics_bind="127.0.0.1:0",
        grace_period=5,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    manager.start()
    try:
        assert manager.probes is not None and manager.webhook_server is not None
        readyz, healthz = f"{manager.probes.url}/readyz", f"{manager.probes.url}/healthz"
        wait_for(lambda: _probe(readyz) == (200, "ok"), timeout=30, message="the operator ready")
        assert _probe(healthz) == (200, "ok")
        manager.webhook_server.stop()
        assert _probe(readyz) == (503, "not ready: the webhook server is not serving")
        assert _probe(healthz) == (503, "not ready: the webhook server is not serving")
    finally:
        manager.stop()
        manager.join(10)


@pytest.fixture
def other_namespace(kube: kube_client.Client) -> Iterator[str]:
    name = f"okt-other-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, kinds.NAMESPACE)
    yield name
    kube.delete(kinds.NAMESPACE, name)


def labelled(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    obj["metadata"]["labels"] = labels
    return obj


def test_an_operator_admits_untouched_the_objects_of_other_namespaces_and_releases_it_does_not_serve(
    kube: kube_client.Client, namespace: str, other_namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    scoped = manager_mod.Manager(
        kube,
        [Gadgets],
        namespaces=[namespace],
        label_selector="release=one",
        metrics_bind="0",
        grace_period=5,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    scoped.start()
    try:
        assert scoped.webhook_server is not None
        configure(scoped.webhook_server.url(), scoped.webhook_server.ca_bundle)  # calls it for every gadget

        wait_for(
            lambda: refused_by_webhook(kube, gadget_kind, namespace, release="one"),
            timeout=30,
            message="the webhook in use",
        )

        # another operator instance's: another namespace, another release of the same namespace
        kube.create(labelled(gadget(other_namespace, "elsewhere", "untagged"), release="one"), gadget_kind)
        kube.create(labelled(gadget(namespace, "two", "untagged"), release="two"), gadget_kind)

        assert kube.get(gadget_kind, "elsewhere", other_namespace)["spec"] == {"image": "untagged"}
        assert kube.get(gadget_kind, "two", namespace)["spec"] == {"image": "untagged"}
        assert refused_by_webhook(kube, gadget_kind, namespace, "mine", release="one")
        kube.create(labelled(gadget(namespace, "mine", "memcached:1.6"), release="one"), gadget_kind)
        assert kube.get(gadget_kind, "mine", namespace)["spec"] == {
            "image": "memcached:1.6",
            "displayName": "gadget mine",
        }
    finally:
        scoped.stop()
        scoped.join(10)


def named(kube: kube_client.Client, namespace: str) -> None:
    """Label ``namespace`` with its name, as the API server does from Kubernetes 1.21 on (not 1.20's)."""
    labels = {"kubernetes.io/metadata.name": namespace}
    kube.patch(kinds.NAMESPACE, namespace, {"metadata": {"labels": labels}})


def test_the_api_server_calls_a_webhook_generated_for_a_scope_for_the_objects_of_that_scope_only(
    kube: kube_client.Client, namespace: str, other_namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    named(kube, namespace)
    named(kube, other_namespace)
    # a server judging every gadget: what it is not asked about is admitted unjudged
    server = webhook_server.WebhookServer(webhook_server.Options(host="127.0.0.1", port=0), [Gadgets], kube)
    server.start()
    try:
        scope = admission.Scope(frozenset({namespace}), "release=one")
        configure(server.url(), server.ca_bundle, scope=scope)

        wait_for(
            lambda: refused_by_webhook(kube, gadget_kind, namespace, release="one"),
            timeout=30,
            message="the webhook in use",
        )

        kube.create(labelled(gadget(other_namespace, "elsewhere", "untagged"), release="one"), gadget_kind)
        kube.create(labelled(gadget(namespace, "two", "untagged"), release="two"), gadget_kind)

        assert kube.get(gadget_kind, "elsewhere", other_namespace)["spec"] == {"image": "untagged"}
        assert kube.get(gadget_kind, "two", namespace)["spec"] == {"image": "untagged"}
    finally:
        server.stop()


released = threading.Event()


class HangingGadgets(Gadgets):
    """Gadgets whose ``check`` of a gadget named ``hang-...`` does not return until the test releases it (a call out
    without a timeout)."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.name.startswith("hang-"):
            assert released.wait(120), "the test never released the check"


def logged_event(logged: list[dict[str, Any]], event: str) -> dict[str, Any] | None:
    return next((entry for entry in list(logged) if entry["event"].startswith(event)), None)


def test_a_hook_that_hangs_is_cut_when_the_api_server_gives_up_and_the_log_names_its_review_then_its_late_answer(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    released.clear()
    try:
        with serving(kube, namespace, HangingGadgets) as manager:
            server = manager.webhook_server
            assert server is not None
            configure(server.url(), server.ca_bundle)  # timeoutSeconds: 5, under the server's 30 s request timeout
            wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
            with structlog.testing.capture_logs() as logged:
                with pytest.raises(okt.ApiError, match="failed calling webhook"):
                    kube.create(gadget(namespace, "hang-1", "memcached:1.6"), gadget_kind)
                # The API server gave up at its 5 s: the review's connection is cut then, and the log says which review
                # hangs (its answer would reach no one), not 30 s later in a debug line.
                cut = wait_for(
                    lambda: logged_event(logged, "a webhook review was not answered within its timeout"),
                    timeout=20,
                    message="the hanging review logged",
                )
                assert cut["log_level"] == "warning"
                assert (cut["path"], cut["namespace"], cut["name"], cut["timeout"]) == (
                    "/validate/gadget",
                    namespace,
                    "hang-1",
                    5.0,
                )
                assert "spec" not in cut and "object" not in cut
                assert not released.is_set()
                # The server serves on beside the hung hook: another object is judged.
                assert refused_by_webhook(kube, gadget_kind, namespace)
                manager.stop()  # nothing waits for the hung review: its caller is gone
                assert manager.join(20)
                assert not released.is_set()
                released.set()
                late = wait_for(
                    lambda: logged_event(logged, "a webhook review was answered after its connection was cut"),
                    timeout=20,
                    message="the late answer logged",
                )
                assert (late["log_level"], late["name"], late["uid"]) == ("warning", "hang-1", cut["uid"])
            assert kube.get_or_none(gadget_kind, "hang-1", namespace) is None
    finally:
        released.set()  # a failed assertion must not leave the hook's thread waiting


class CarelessGadgets(Gadgets):
    """Gadgets whose ``check`` of a gadget named ``careless-...`` has a bug: it looks up a value of the spec (a
    password, say) where the key belongs, and the ``KeyError`` it raises says that value."""

    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.name.startswith("careless-"):
            {"memcached:1.6": "known"}[ctx.spec.image]


def test_a_check_that_raises_a_bug_is_refused_as_an_internal_error_naming_its_class_not_its_text(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    with serving(kube, namespace, CarelessGadgets) as manager:
        server = manager.webhook_server
        assert server is not None
        configure(server.url(), server.ca_bundle)
        wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
        with structlog.testing.capture_logs() as logged, pytest.raises(okt.ApiError) as refused:
            kube.create(gadget(namespace, "careless-1", "hunter2:secret"), gadget_kind)

        assert (refused.value.status, refused.value.api_reason) == (500, "InternalError")
        assert refused.value.api_message.endswith("denied the request: internal error in check: KeyError")
        assert "hunter2" not in str(refused.value)
        assert kube.get_or_none(gadget_kind, "careless-1", namespace) is None
        (bug,) = [entry for entry in logged if entry["log_level"] == "error"]
        assert (bug["hook"], bug["namespace"], bug["name"]) == ("check", namespace, "careless-1")
        assert "ctx.spec.image]" in bug["stack"]  # where it was raised
        assert "object" not in bug and "spec" not in bug


class WarnedGadgets(Gadgets):
    """Warns of a :latest image at validation and of a displayName given at defaulting, and keeps what each
    validation was told of its request."""

    validated: list[tuple[bool, str, tuple[str, ...]]] = []

    def check(self, ctx: okt.Context) -> None:
        if ctx.admission is None:
            return
        type(self).validated.append((ctx.admission.dry_run, ctx.admission.username, ctx.admission.groups))
        if ctx.spec.image.endswith(":latest"):
            ctx.admission.warn("spec.image: the :latest tag is deprecated\n(pin a version)")

    def default(self, obj: dict[str, Any], admission: okt.Admission | None = None) -> Mapping[str, Any] | None:
        if admission is not None and "displayName" in obj["spec"]:
            admission.warn(f"spec.displayName is deprecated, set by {admission.username}")
        return super().default(obj)


def test_kubectl_prints_the_warnings_of_an_admitted_object_and_a_dry_run_is_one_to_check(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    gadget_kind: kinds.Kind,
    configure: Any,
    tmp_path: pathlib.Path,
) -> None:
    with serving(kube, namespace, WarnedGadgets) as manager:
        server = manager.webhook_server
        assert server is not None
        configure(server.url(), server.ca_bundle)
        wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
        WarnedGadgets.validated.clear()

        latest = {**gadget(namespace, "latest", "memcached:latest")}
        latest["spec"] = {**latest["spec"], "displayName": "mine"}
        written = apply(control_plane, latest, tmp_path)

        assert written.returncode == 0, written.stderr
        assert "Warning: spec.image: the :latest tag is deprecated (pin a version)\n" in written.stderr
        assert f"Warning: spec.displayName is deprecated, set by {envtest.ADMIN_USER}\n" in written.stderr
        assert kube.get(gadget_kind, "latest", namespace)["spec"]["displayName"] == "mine"
        (write,) = WarnedGadgets.validated
        assert write[:2] == (False, envtest.ADMIN_USER) and "system:masters" in write[2]

        manifest = tmp_path / "tried.json"
        manifest.write_text(json.dumps(gadget(namespace, "tried", "memcached:latest")))
        tried = kubectl.kubectl(control_plane.kubeconfig, "apply", "--dry-run=server", "-f", str(manifest))

        assert tried.returncode == 0, tried.stderr
        assert "Warning: spec.image: the :latest tag is deprecated (pin a version)\n" in tried.stderr
        assert WarnedGadgets.validated[1][:2] == (True, envtest.ADMIN_USER)
        assert kube.get_or_none(gadget_kind, "tried", namespace) is None


class ReservedGadgets(Gadgets):
    """Refuses a gadget of a reserved name with 409 ``Conflict``, and keeps what each validation was told."""

    told: list[okt.Admission] = []

    def check(self, ctx: okt.Context) -> None:
        if ctx.admission is None:
            return
        type(self).told.append(ctx.admission)
        if ctx.cr.name.startswith("reserved-"):
            raise okt.AdmissionRefused(f"metadata.name: {ctx.cr.name} is reserved", code=409)


def test_a_check_refuses_with_a_code_of_its_own_that_the_client_and_kubectl_see_and_reads_the_calls_headers(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    gadget_kind: kinds.Kind,
    configure: Any,
    tmp_path: pathlib.Path,
) -> None:
    with serving(kube, namespace, ReservedGadgets) as manager:
        server = manager.webhook_server
        assert server is not None
        configure(server.url(), server.ca_bundle)
        wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
        ReservedGadgets.told.clear()

        with pytest.raises(okt.Conflict) as refused:
            kube.create(gadget(namespace, "reserved-1", "memcached:1.6"), gadget_kind)
        applied = apply(control_plane, gadget(namespace, "reserved-2", "memcached:1.6"), tmp_path)

    assert (refused.value.status, refused.value.api_reason) == (409, "Conflict")
    assert refused.value.api_message.endswith("denied the request: metadata.name: reserved-1 is reserved")
    assert applied.returncode != 0
    assert "Error from server (Conflict): " in applied.stderr
    assert "denied the request: metadata.name: reserved-2 is reserved" in applied.stderr
    assert kube.get_or_none(gadget_kind, "reserved-1", namespace) is None
    told = ReservedGadgets.told[0]
    assert (told.username, told.user_uid) == (envtest.ADMIN_USER, envtest.ADMIN_USER)  # the token file's uid column
    assert told.headers["content-type"] == "application/json"
    assert told.headers["user-agent"].startswith("kube-apiserver-admission")


class DisplayedGadgets(Gadgets):
    """Shows a gadget by its label ``display`` where it has one (a default derived from a label, recomputed when the
    label changes), and cleans up after it (okt's finalizer: okt's own write goes through the webhook too)."""

    finalizer = f"{GROUP}/cleanup"

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        shown = (obj["metadata"].get("labels") or {}).get("display")
        obj["spec"]["displayName"] = shown or f"gadget {obj['metadata']['name']}"
        return obj


def test_a_default_derived_from_a_label_follows_the_label_and_reaches_an_object_stored_before_the_webhook(
    kube: kube_client.Client, namespace: str, gadget_kind: kinds.Kind, configure: Any
) -> None:
    kube.create(gadget(namespace, "legacy-1", "memcached:1.6"), gadget_kind)  # no webhook yet: stored undefaulted

    def shown() -> Any:
        return kube.get(gadget_kind, "legacy-1", namespace)["spec"].get("displayName")

    with serving(kube, namespace, DisplayedGadgets) as manager:
        server = manager.webhook_server
        assert server is not None
        configure(server.url(), server.ca_bundle)
        wait_for(lambda: refused_by_webhook(kube, gadget_kind, namespace), timeout=30, message="the webhook in use")
        # Stored undefaulted; okt's own write of its finalizer, once the webhook is in use, may have defaulted it.
        assert shown() in (None, "gadget legacy-1")

        for display, expected in (("blue", "blue"), ("green", "green"), (None, "gadget legacy-1")):
            kube.patch(gadget_kind, "legacy-1", {"metadata": {"labels": {"display": display}}}, namespace)
            assert shown() == expected  # the spec was left as it was: defaulted all the same

        # okt's finalizer is kept through every defaulted write, and okt's writes settle: no loop.
        wait_for(
            lambda: (
                DisplayedGadgets.finalizer
                in kube.get(gadget_kind, "legacy-1", namespace)["metadata"].get("finalizers", ())
            ),
            timeout=20,
            message="okt's finalizer on the gadget",
        )

        def quiet_for_two_seconds() -> bool:  # the status written after the finalizer settles too; a loop never does
            before = kube.get(gadget_kind, "legacy-1", namespace)["metadata"]["resourceVersion"]
            time.sleep(2)
            return bool(kube.get(gadget_kind, "legacy-1", namespace)["metadata"]["resourceVersion"] == before)

        wait_for(quiet_for_two_seconds, timeout=30, message="okt's writes of the gadget settled")
        kube.delete(gadget_kind, "legacy-1", namespace)  # while the operator serves: its finalizer goes
        wait_for(lambda: kube.get_or_none(gadget_kind, "legacy-1", namespace) is None, timeout=20, message="deleted")


class TeamGadgets(Gadgets):
    """Reconciles the gadgets of the teams it knows, read from a label that may be missing or name another team: its
    ``when`` then raises a KeyError, whose text is the label's value."""

    def when(self, obj: Mapping[str, Any]) -> bool:
        return {"blue": True}[obj["metadata"]["labels"]["team"]]


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
def test_a_when_that_raises_refuses_the_object_naming_its_class_whatever_the_failure_policy(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    configure: Any,
    failure_policy: webhooks.FailurePolicy,
) -> None:
    with serving(kube, namespace, TeamGadgets) as manager:
        server = manager.webhook_server
        assert server is not None
        configure(server.url(), server.ca_bundle, failure_policy=failure_policy)
        wait_for(
            lambda: refused_by_webhook(kube, gadget_kind, namespace, team="blue"),
            timeout=30,
            message="the webhook in use",
        )
        with structlog.testing.capture_logs() as logged, pytest.raises(okt.ApiError) as refused:
            kube.create(labelled(gadget(namespace, "team-1", "memcached:1.6"), team="hunter2"), gadget_kind)

    assert (refused.value.status, refused.value.api_reason) == (500, "InternalError")
    assert refused.value.api_message.endswith("denied the request: internal error in when: KeyError")
    assert "hunter2" not in str(refused.value)
    assert kube.get_or_none(gadget_kind, "team-1", namespace) is None
    assert [(e["hook"], e["name"]) for e in logged if e["log_level"] == "error"] == [("when", "team-1")]
