"""The values of the Secrets a reconcile reads never reach what okt says of its errors — the log (at every level, the
traceback included), the Ready condition, the Warning Event — whatever the text of the exception a hook raises on
them: ``int()`` of a value that is no number quotes it, a lookup by it (``KeyError``) is its repr. What is said still
names the exception and what went wrong. The same holds of the hooks that run outside a reconcile (a start-up hook, a
watch's mapping), and of the API server's refusal of a Secret's data, which quotes a character of it."""

from __future__ import annotations

import base64
import functools
import io
import logging
import secrets
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pydantic
import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import backoff, logs, startup
from okt.runtime import cache as cache_mod
from okt.status import events
from okt.testing import condition, crds

pytestmark = pytest.mark.integration

GROUP = "vaults.okt.io"
PASSWORD = "hunter2-" + secrets.token_hex(4)


class VaultSpec(pydantic.BaseModel):
    secret: str = "login"
    lookup: bool = False


class Vault(okt.Reconciler):
    api_version = f"{GROUP}/v1"
    kind = "Vault"
    plural = "vaults"
    spec_model = VaultSpec

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.Mutator:
            spec: VaultSpec = ctx.spec
            read = ctx.client.get(ctx.client.resolve("v1", "Secret"), spec.secret, ctx.cr.namespace)
            password = base64.b64decode(read["data"]["password"]).decode()
            if spec.lookup:
                {"admin": 1}[password]  # a KeyError whose text is the value
            int(password)  # a ValueError quoting the value: "invalid literal for int() with base 10: '...'"
        return None


@pytest.fixture(scope="module")
def vault_kind(apply_crd: Any) -> kinds.Kind:
    kind: kinds.Kind = apply_crd(crds.schemaless_crd(GROUP, "Vault", "vaults"))
    return kind


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """okt's log at debug level, rendered as JSON lines (tracebacks included), while the test runs."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    logs.configure("json", 1, stream=stream)
    yield stream
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize(
    ("lookup", "said"),
    [
        (False, "ValueError: invalid literal for int() with base 10: '(a Secret's value, left out)'"),
        (True, "KeyError: '(a Secret's value, left out)'"),
    ],
    ids=["int", "lookup"],
)
def test_a_secret_s_value_quoted_by_a_hook_s_exception_is_left_out_of_the_log_the_condition_and_the_event(
    kube: kube_client.Client, vault_kind: kinds.Kind, namespace: str, logged: io.StringIO, lookup: bool, said: str
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": PASSWORD}})
    name = f"v-{secrets.token_hex(3)}"
    body = {"apiVersion": vault_kind.api_version, "kind": "Vault", "metadata": {"name": name, "namespace": namespace}}
    kube.create({**body, "spec": {"lookup": lookup}}, vault_kind)

    run = okt.reconcile(Vault(), kube, None, namespace, name, kind=vault_kind, recorder=events.EventRecorder(kube, "v"))

    assert run.outcome.kind is okt.OutcomeKind.RETRY, run.outcome
    ready = condition(kube.get(vault_kind, name, namespace), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == ("False", "ReconcileError"), ready
    assert ready["message"] == said.split(": ", 1)[1], ready["message"]  # still what went wrong
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == name]
    assert event["message"] == ready["message"], event
    log = logged.getvalue()
    assert "Traceback" in log and said in log, log  # its traceback, the value left out
    assert PASSWORD not in log, log
    assert PASSWORD not in str(ready) and PASSWORD not in str(event)


def test_a_start_up_hook_failing_on_a_secret_s_value_it_read_stops_the_start_without_the_value(
    kube: kube_client.Client, namespace: str
) -> None:
    """A start-up hook runs before any reconcile: each call is a block of its own, and the ConfigurationError that
    stops the start (what ``okt run`` prints) says its error without the value of the Secret it read."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"port": PASSWORD}})

    def connect(client: kube_client.Client) -> None:
        read = client.get(client.resolve("v1", "Secret"), "login", namespace)
        int(base64.b64decode(read["data"]["port"]).decode())

    with pytest.raises(okt.ConfigurationError) as raised:
        startup.run([connect], kube, stopping=threading.Event(), backoff=backoff.Backoff())

    said = str(raised.value)
    assert said.endswith(
        ".connect failed: ValueError: invalid literal for int() with base 10: '(a Secret's value, left out)'"
    ), said
    assert PASSWORD not in said, said


def test_a_watch_s_mapping_failing_on_a_secret_s_value_it_read_is_logged_without_the_value(
    kube: kube_client.Client, vault_kind: kinds.Kind, namespace: str, logged: io.StringIO
) -> None:
    """A mapping runs on the controller's mapping thread, outside any reconcile: each event is a block of its own,
    and the value of a Secret it reads through ``ctx.reader`` (here from the API server: Secrets are not watched) is
    left out of the line that says it failed."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"vault": PASSWORD}})

    def vaults_of(obj: Mapping[str, Any], ctx: watches.MapContext) -> list[tuple[str, str]]:
        read = ctx.reader.get(kinds.BUILTIN[("v1", "Secret")], "login", namespace)
        assert read is not None
        return [(namespace, {"main": "vault"}[base64.b64decode(read["data"]["vault"]).decode()])]

    config = kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": namespace}})
    cache = cache_mod.Cache(kube, [namespace])
    log = structlog.get_logger("okt.test")
    ctx = watches.MapContext(vault_kind, cache, log, find=lambda name, value: [])
    try:
        keys = watches.keys_for_event(watches.watch(kinds.CONFIG_MAP, map=vaults_of), "ADDED", config, None, ctx)
    finally:
        cache.stop()

    assert keys == []
    said = logged.getvalue()
    assert "KeyError: '(a Secret's value, left out)'" in said, said
    assert PASSWORD not in said, said


def test_an_invalid_dockerconfigjson_is_refused_without_the_character_of_it_the_api_server_quotes(
    kube: kube_client.Client, namespace: str
) -> None:
    """Kubernetes 1.20 says a ``.dockerconfigjson`` that is no JSON with its JSON decoder's error, which quotes the
    first character it could not read (``invalid character 'h' looking for beginning of value``): a character of the
    Secret's value, which okt says in Ready and an Event. okt says the refusal without it."""
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pull", "namespace": namespace},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(PASSWORD.encode()).decode()},
    }
    for write in (kube.create, functools.partial(kube.apply, field_manager="okt-test")):
        with pytest.raises(okt.Invalid) as raised:
            write(body)

        said = okt.errors.message_of(raised.value)
        assert said.endswith(
            "422 Invalid: data[.dockerconfigjson]: invalid value: invalid character looking for beginning of value"
        ), said
        assert "'h'" not in said, said
