"""The values of the Secrets a reconcile reads never reach what okt says of its errors — the log (at every level, the
traceback included), the Ready condition, the Warning Event — whatever the text of the exception a hook raises on
them: ``int()`` of a value that is no number quotes it, a lookup by it (``KeyError``) is its repr. What is said still
names the exception and what went wrong. The same holds of the hooks that run outside a reconcile (a start-up hook, a
watch's mapping), and of the API server's refusal of a Secret's data, which quotes a character of it."""

from __future__ import annotations

import base64
import functools
import io
import json
import logging
import secrets
import threading
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import pydantic
import pytest
import structlog

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import backoff, logs, startup
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import manager as manager_mod
from okt.status import events
from okt.testing import condition, crds, wait_for

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


class Stopped(BaseException):
    """Not an ``Exception``: raised by the operator's code, as ``SystemExit`` or ``KeyboardInterrupt`` would be."""


class Logins(okt.Reconciler):
    """Secrets, a built-in primary, filtered by a ``when`` that fails on the value of the Secret it is given."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"
    raises: ClassVar[type[BaseException]] = ValueError

    def when(self, obj: Mapping[str, Any]) -> bool:
        data = obj.get("data") or {}
        if "password" in data:
            raise self.raises(f"bad {data['password']}")  # the value as stored, in base64
        return False


def no_vault(secret: Mapping[str, Any], ctx: watches.MapContext) -> list[tuple[str, str]]:
    raise Stopped(f"no vault for {secret['data']['password']}")


def no_index(secret: Mapping[str, Any]) -> list[str]:
    raise Stopped(f"no index for {secret['data']['password']}")


class VaultsOfSecrets(Vault):
    """Vaults reconciled by a watch of Secrets whose mapping fails on the value of the Secret it is given, with an
    exception that is no ``Exception``."""

    watches = (okt.watch("secrets", map=no_vault),)


class VaultsIndexingSecrets(Vault):
    """Vaults keeping an index of the Secrets whose function fails so."""

    watches = (okt.watch("secrets", indexes={"password": no_index}),)


def run_manager(kube: kube_client.Client, namespace: str, reconciler: type[okt.Reconciler]) -> manager_mod.Manager:
    manager = manager_mod.Manager(kube, [reconciler], namespaces=[namespace], metrics_bind="0", grace_period=5)
    manager.start()
    return manager


@pytest.mark.parametrize("raises", [ValueError, Stopped], ids=["exception", "base-exception"])
def test_a_when_failing_on_the_value_of_the_secret_it_is_given_is_logged_without_the_value(
    kube: kube_client.Client, namespace: str, logged: io.StringIO, raises: type[BaseException]
) -> None:
    """``when(obj)`` runs on the informer's thread, in no block: the Secret it is given (the primary itself) is held
    for what is said of its failure, and one that raises no ``Exception`` is said alike (it ended the informer)."""
    Logins.raises = raises
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": PASSWORD}})
    manager = run_manager(kube, namespace, Logins)
    try:
        wait_for(lambda: '"when() raised' in logged.getvalue(), timeout=20, message="the failure of when() logged")
    finally:
        manager.stop()
        manager.join(15)

    log = logged.getvalue()
    assert PASSWORD not in log and base64.b64encode(PASSWORD.encode()).decode() not in log, log
    line = next(json.loads(text) for text in log.splitlines() if '"when() raised' in text)
    assert line["error"] == f"{raises.__name__}: bad (a Secret's value, left out)", line


@pytest.mark.parametrize(
    ("reconciler", "said", "error"),
    [
        (VaultsOfSecrets, "a watch's mapping function raised", "Stopped: no vault for (a Secret's value, left out)"),
        (VaultsIndexingSecrets, "an index function raised", "Stopped: no index for (a Secret's value, left out)"),
    ],
    ids=["mapping", "index"],
)
def test_a_mapping_or_index_raising_no_exception_on_a_watched_secret_s_value_is_logged_without_it(
    kube: kube_client.Client,
    vault_kind: kinds.Kind,
    namespace: str,
    logged: io.StringIO,
    reconciler: type[okt.Reconciler],
    said: str,
    error: str,
) -> None:
    """A ``BaseException`` of a mapping, or of an index function, given a watched Secret is said as an ``Exception``
    is, in the Secret's block: neither the controller's mapping thread nor the informer's says it outside (the
    informer's ended, and Python printed its traceback, the value in it)."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": PASSWORD}})
    manager = run_manager(kube, namespace, reconciler)
    try:
        # The controller's mapping thread said what escaped the mapping, when anything did.
        told = (f'"{said}', '"mapping a watched object\'s event failed"')
        wait_for(lambda: any(t in logged.getvalue() for t in told), timeout=20, message="the failure logged")
    finally:
        manager.stop()
        manager.join(15)

    log = logged.getvalue()
    assert PASSWORD not in log and base64.b64encode(PASSWORD.encode()).decode() not in log, log
    line = next(json.loads(text) for text in log.splitlines() if f'"{said}' in text)
    assert line["error"] == error, line


class RevokedLogins(okt.Reconciler):
    """Secrets, a built-in primary, whose cleanup fails on the value of the Secret it reconciles."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"
    finalizer = f"{GROUP}/revoke"

    def cleanup(self, ctx: okt.Context) -> okt.Outcome | None:
        raise ValueError(f"cannot revoke {base64.b64decode(ctx.cr.raw['data']['password']).decode()}")


def test_a_cleanup_failing_on_the_value_of_a_secret_deleted_past_its_finalizer_is_said_without_the_value(
    kube: kube_client.Client, namespace: str, logged: io.StringIO
) -> None:
    """A Secret gone with okt's finalizer still on it (its deletion did not wait) is reconciled from its last state,
    which the controller's reader answers from memory, not through a read that holds it: the reconcile holds the
    primary it is given, however it was read, and its cleanup's failure is said without the value."""
    secret_kind = kinds.BUILTIN[("v1", "Secret")]
    metadata = {"name": "login", "namespace": namespace, "finalizers": [RevokedLogins.finalizer]}
    stored = kube.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "stringData": {"password": PASSWORD}}
    )
    kube.patch(secret_kind, "login", {"metadata": {"finalizers": None}}, namespace)
    kube.delete(secret_kind, "login", namespace)
    last = controller_mod.gone_past_finalizers(stored, [RevokedLogins.finalizer])
    assert last is not None
    cache = cache_mod.Cache(kube, [namespace])
    try:
        reader = controller_mod._Gone(cache, None, secret_kind, last)
        run = okt.reconcile(
            RevokedLogins(),
            kube,
            reader,
            namespace,
            "login",
            kind=secret_kind,
            recorder=events.EventRecorder(kube, "v"),
        )
    finally:
        cache.stop()

    assert run.outcome.kind is okt.OutcomeKind.RETRY, run.outcome
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    log = logged.getvalue()
    assert "ValueError: cannot revoke (a Secret's value, left out)" in log, log
    assert PASSWORD not in log and encoded not in log, log
    [event] = [e for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == "login"]
    said = f"deletion blocked by finalizer {RevokedLogins.finalizer}: cannot revoke (a Secret's value, left out)"
    assert event["message"] == said, event


def password_of(obj: Mapping[str, Any] | None) -> str:
    assert obj is not None
    return base64.b64decode(obj["data"]["password"]).decode()


class ReconciledLogins(okt.Reconciler):
    """Secrets, a built-in primary, whose reconcile fails on the value of the Secret it reconciles (read from the
    cache, not through the client)."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> okt.Outcome | None:
        super().enter_in_state(state, ctx)
        if state is okt.State.Mutator:
            raise ValueError(f"bad login {password_of(ctx.cr.raw)}")
        return None


class WatchedLogins(okt.Reconciler):
    """Secrets whose daemon fails on the value of the Secret it is given to watch over."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"

    @okt.daemon(backoff=5, max_backoff=5)
    def watch_login(self, ctx: okt.DaemonContext) -> None:
        raise ValueError(f"bad login {password_of(ctx.read())}")


class TimedLogins(okt.Reconciler):
    """Secrets whose timers fail on the value of the Secret they run for: on the reconcile's worker, and in a thread
    of its own (a timer with a timeout)."""

    api_version = "v1"
    kind = "Secret"
    status = "annotations"

    @okt.every(seconds=60)
    def rotate(self, ctx: okt.Context) -> None:
        raise ValueError(f"bad login {password_of(ctx.cr.raw)}")

    @okt.every(seconds=60, timeout=10)
    def rotate_later(self, ctx: okt.Context) -> None:
        raise ValueError(f"bad login {password_of(ctx.cr.raw)}")


@pytest.mark.parametrize(
    ("reconciler", "said", "events_said"),
    [
        (ReconciledLogins, ('"reconciled"',), ("bad login (a Secret's value, left out)",)),
        (WatchedLogins, ('"daemon failed, restarting after a backoff"',), ()),
        (
            TimedLogins,
            ('"timer failed"', '"timer": "rotate"', '"timer": "rotate_later"'),
            tuple(
                f"timer {t} failed: ValueError: bad login (a Secret's value, left out)"
                for t in ("rotate", "rotate_later")
            ),
        ),
    ],
    ids=["reconcile", "daemon", "timers"],
)
def test_a_hook_failing_on_the_value_of_the_secret_it_is_given_is_said_without_the_value(
    kube: kube_client.Client,
    namespace: str,
    logged: io.StringIO,
    reconciler: type[okt.Reconciler],
    said: tuple[str, ...],
    events_said: tuple[str, ...],
) -> None:
    """A reconciler of Secrets: the primary its reconcile reads from the cache, the object a daemon reads through
    ``ctx.read()`` and the one a timer runs for are held in the block each runs in, and what is said of their
    failure — the log, an Event, the conditions written to the Secret — leaves the value out."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "login", "namespace": namespace}}
    kube.create({**secret, "stringData": {"password": PASSWORD}})
    secret_kind = kinds.BUILTIN[("v1", "Secret")]

    def told() -> bool:
        told = [e["message"] for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == "login"]
        return all(t in logged.getvalue() for t in said) and all(m in told for m in events_said)

    manager = run_manager(kube, namespace, reconciler)
    try:
        wait_for(told, timeout=20, message="the failure said")
    finally:
        manager.stop()
        manager.join(15)

    log = logged.getvalue()
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    assert "ValueError: bad login (a Secret's value, left out)" in log, log
    assert PASSWORD not in log and encoded not in log, log
    messages = [e["message"] for e in kube.list(kinds.EVENT, namespace)[0] if e["involvedObject"]["name"] == "login"]
    assert not [m for m in messages if PASSWORD in m], messages
    annotations = kube.get(secret_kind, "login", namespace)["metadata"].get("annotations") or {}
    assert PASSWORD not in json.dumps(annotations), annotations
    if reconciler is ReconciledLogins:
        assert "bad login (a Secret's value, left out)" in json.dumps(annotations), annotations  # Ready says it
