"""A deposed leader stops writing at once: proven from the API server's audit log.

Two Managers in one process stand for two operator replicas, each with its own token user so the audit log tells
their requests apart. The first leads and is stuck inside a reconcile (a hook waits) when it loses the lease; the
second acquires the lease once it expired and reconciles the same object. Released afterwards, the first leader's
reconcile goes on to its writes: none of them may reach the server.
"""

from __future__ import annotations

import contextlib
import datetime
import pathlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
import yaml

import okt
from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import certs
from okt.runtime import manager as manager_mod
from okt.testing import audit, condition, envtest, wait_for
from tests.integration.reconciler import conftest as shared
from tests.integration.relay import Relay

pytestmark = pytest.mark.integration

OLD = envtest.TokenUser("replica-old", "old-" + "0" * 28, ("system:masters",))
NEW = envtest.TokenUser("replica-new", "new-" + "0" * 28, ("system:masters",))
LEASE = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}
REQUEST_TIMEOUT = 3.0
NODE = kinds.BUILTIN[("v1", "Node")]


@pytest.fixture(scope="module")
def audited() -> Iterator[envtest.ControlPlane]:
    plane = envtest.ControlPlane(users=(OLD, NEW), audit_log=True, crds=(shared.widget_crd(),))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


class Stuck(shared.WidgetReconciler):
    """In the process of ``stuck_client``, waits in the Updater (before any write) while ``hold`` is set."""

    hold: ClassVar[threading.Event] = threading.Event()
    waiting: ClassVar[threading.Event] = threading.Event()
    stuck_client: ClassVar[Any] = None

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and ctx.client is self.stuck_client and self.hold.is_set():
            self.waiting.set()
            while self.hold.is_set():
                time.sleep(0.05)
        super().enter_in_state(state, ctx)


def client_of(plane: envtest.ControlPlane, user: envtest.TokenUser) -> kube_client.Client:
    return kube_client.Client.from_kubeconfig(plane.kubeconfig_for(user))


def manager_of(client: kube_client.Client, namespace: str, identity: str) -> manager_mod.Manager:
    return manager_mod.Manager(
        client,
        [Stuck],
        namespaces=[namespace],
        leader_elect=True,
        lease_namespace=namespace,
        identity=identity,
        metrics_bind="0",
        grace_period=10.0,
        **LEASE,
    )


def test_no_write_of_the_old_leader_reaches_the_server_after_the_new_leaders_first(
    audited: envtest.ControlPlane,
) -> None:
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    namespace = "fenced"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    old_client, new_client = client_of(audited, OLD), client_of(audited, NEW)
    Stuck.hold.set()
    Stuck.stuck_client = old_client
    old = manager_of(old_client, namespace, "old")
    old.start()
    try:
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert Stuck.waiting.wait(30), "the old leader reconciles the widget"
        # The old leader's renewals now fail: someone else holds the lease (and lets it expire).
        lease_kind = admin.resolve("coordination.k8s.io/v1", "Lease")
        lease = admin.get(lease_kind, old.lease_name, namespace)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"].update(holderIdentity="nobody", renewTime=now)
        admin.replace(lease_kind, lease)
        new = manager_of(new_client, namespace, "new")
        new.start()
        try:
            wait_for(lambda: condition(admin.get(widget_kind, "w", namespace), "Ready"), timeout=60)
            Stuck.hold.clear()  # the old leader's reconcile goes on to its writes
            wait_for(lambda: not old.running, timeout=30)
        finally:
            new.stop()
            new.join(15)
    finally:
        Stuck.hold.clear()
        old.stop()
        old.join(15)

    assert old.lost_leadership
    log = audit.AuditLog(audited.audit_log_path, [OLD.name, NEW.name])
    wait_for(lambda: (log.refresh(), log.counts(NEW.name).writes > 0)[1], timeout=30)
    time.sleep(audit.FLUSH_LAG)
    log.refresh()
    new_writes = [r for r in log.requests(NEW.name) if r.is_write and r.resource != "leases"]
    first_new_write = min(r.received for r in new_writes)
    late = [r for r in log.requests(OLD.name, start=first_new_write) if r.is_write]
    assert late == []
    assert old_client.stats.writes() > 0  # it did write while it led (the lease, at least)


class OnTheWire(shared.WidgetReconciler):
    """In the Updater of ``old``'s reconcile, creates the ConfigMap ``on-the-wire`` through ``relayed`` (a client
    whose bytes its :class:`Relay` holds), under the reconcile's write fence."""

    old: ClassVar[Any] = None
    namespace: ClassVar[str] = ""
    relayed: ClassVar[Any] = None
    outcome: ClassVar[list[BaseException | None]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and ctx.client is self.old and not self.outcome:
            metadata = {"name": "on-the-wire", "namespace": self.namespace}
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
            try:
                self.relayed.create(body, kinds.CONFIG_MAP)
            except BaseException as exc:
                self.outcome.append(exc)
                raise
            self.outcome.append(None)
        super().enter_in_state(state, ctx)


@contextlib.contextmanager
def write_on_the_wire(
    plane: envtest.ControlPlane, tmp_path: pathlib.Path, namespace: str
) -> Iterator[tuple[kube_client.Client, Relay, manager_mod.Manager]]:
    """A leading manager whose reconcile of a widget has a write on the wire, held by the relay."""
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    relay = Relay(plane.url)
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = relay.url
    envtest.write_private(tmp_path / "relayed", yaml.safe_dump(config))
    relayed = kube_client.Client.from_kubeconfig(tmp_path / "relayed", timeout=REQUEST_TIMEOUT)
    old_client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(OLD), timeout=REQUEST_TIMEOUT)
    OnTheWire.old, OnTheWire.relayed, OnTheWire.namespace, OnTheWire.outcome = old_client, relayed, namespace, []
    relayed.get(kinds.NAMESPACE, namespace)  # a kept-alive connection, its handshake done
    relay.hold.set()
    old = manager_mod.Manager(
        old_client,
        [OnTheWire],
        namespaces=[namespace],
        leader_elect=True,
        lease_namespace=namespace,
        identity="old",
        metrics_bind="0",
        grace_period=0.5,
        **LEASE,
    )
    old.start()
    try:
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert relay.held.wait(30), "the reconcile's write is on the wire"
        yield admin, relay, old
    finally:
        relay.close()
        old.stop()
        old.join(15)
        relayed.close()


def test_a_stopping_leader_releases_its_lease_only_once_the_write_on_the_wire_was_answered(
    audited: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    """A reconcile still running past the grace period may have a write on the wire: released at once, the lease
    would let a standby write before the API server received it."""
    namespace = "on-the-wire-answered"
    with write_on_the_wire(audited, tmp_path, namespace) as (admin, relay, old):
        old.stop()
        time.sleep(3 * old.grace_period)  # past the grace period: the reconcile is still in its write
        relay.proceed.set()
        assert old.join(3 * REQUEST_TIMEOUT)
        wait_for(lambda: OnTheWire.outcome, timeout=3 * REQUEST_TIMEOUT)  # the reconcile outlives the shutdown
        assert OnTheWire.outcome == [None]
        written = admin.get(kinds.CONFIG_MAP, "on-the-wire", namespace)
        lease = admin.get(kinds.LEASE, old.lease_name, namespace)
    assert lease["spec"]["holderIdentity"] == ""  # released
    # The API server wrote the ConfigMap before the release (resourceVersions are the store's revisions).
    assert int(written["metadata"]["resourceVersion"]) < int(lease["metadata"]["resourceVersion"])


def test_a_stopping_leader_whose_write_is_still_on_the_wire_leaves_its_lease_to_expire(
    audited: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    namespace = "on-the-wire-held"
    with write_on_the_wire(audited, tmp_path, namespace) as (admin, _relay, old):
        old.stop()
        assert old.join(3 * REQUEST_TIMEOUT)
        lease = admin.get(kinds.LEASE, old.lease_name, namespace)
        assert admin.get_or_none(kinds.CONFIG_MAP, "on-the-wire", namespace) is None  # still held
    assert lease["spec"]["holderIdentity"] == "old"  # not released: the others wait for it to expire
    assert isinstance(OnTheWire.outcome[0], errors.Unavailable)


class HeldAnswer:
    """A server on the loopback that reads one request on each connection (over TLS when given ``tls``), sets
    :attr:`received`, and answers it 204 only once :attr:`proceed` is set — an operand running the call, or a node
    running an exec's command, while the caller waits. ``on_answer`` runs just before the answer is written."""

    def __init__(self, tls: ssl.SSLContext | None = None, on_answer: Callable[[], None] = lambda: None) -> None:
        self._tls = tls
        self._on_answer = on_answer
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.received, self.proceed = threading.Event(), threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self) -> None:
        self.proceed.set()
        self._listener.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            with self._tls.wrap_socket(conn, server_side=True) if self._tls is not None else conn as sock:
                if not sock.recv(65536):
                    return
                self.received.set()
                self.proceed.wait()
                self._on_answer()
                sock.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass  # the caller hung up


class CallsTheOperand(shared.WidgetReconciler):
    """In the Updater of ``old``'s first reconcile, calls ``call(ctx)`` (an exec, a call to the operand), under the
    reconcile's write fence; what it raised, or None, goes to ``outcome``."""

    old: ClassVar[Any] = None
    call: ClassVar[Callable[[okt.Context], object]] = staticmethod(lambda ctx: None)
    outcome: ClassVar[list[BaseException | None]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and ctx.client is self.old and not self.outcome:
            try:
                type(self).call(ctx)
            except BaseException as exc:
                self.outcome.append(exc)
                raise
            self.outcome.append(None)
        super().enter_in_state(state, ctx)


@contextlib.contextmanager
def leading_while(
    plane: envtest.ControlPlane, namespace: str, call: Callable[[okt.Context], object], answer: HeldAnswer
) -> Iterator[tuple[kube_client.Client, manager_mod.Manager]]:
    """A leading manager whose reconcile of a widget runs ``call``, received by ``answer`` and not answered yet."""
    admin = kube_client.Client.from_kubeconfig(plane.kubeconfig)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    old_client = kube_client.Client.from_kubeconfig(plane.kubeconfig_for(OLD), timeout=REQUEST_TIMEOUT)
    CallsTheOperand.old, CallsTheOperand.call, CallsTheOperand.outcome = old_client, staticmethod(call), []
    old = manager_mod.Manager(
        old_client,
        [CallsTheOperand],
        namespaces=[namespace],
        leader_elect=True,
        lease_namespace=namespace,
        identity="old",
        metrics_bind="0",
        grace_period=0.5,
        **LEASE,
    )
    old.start()
    try:
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert answer.received.wait(30), "the reconcile's call reached its target"
        yield admin, old
    finally:
        answer.close()
        old.stop()
        old.join(15)


def test_a_stopping_leader_whose_exec_is_still_running_leaves_its_lease_to_expire(
    audited: envtest.ControlPlane,
) -> None:
    """A command run through ``pods/exec`` may change the operand until it ends: released while it runs, the lease
    would let a standby act on the operand beside it. (The Pod is bound to a node whose kubelet is a local server:
    the API server hands it the exec, which it holds without answering: the exec waits no longer than the leader may
    write, and ends without an answer, its command perhaps still running.)"""
    namespace = "exec-running"
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    kubelet = HeldAnswer(tls=certs.self_signed(["127.0.0.1"]).server_context())
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": namespace}}
    admin.create(node, NODE)
    addresses = [{"type": "InternalIP", "address": "127.0.0.1"}]
    endpoints = {"kubeletEndpoint": {"Port": kubelet.port}}
    admin.patch(
        NODE, namespace, {"status": {"addresses": addresses, "daemonEndpoints": endpoints}}, subresource="status"
    )
    container = {"name": "operand", "image": "operand"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    admin.create({**pod, "spec": {"nodeName": namespace, "containers": [container]}})
    try:
        with leading_while(audited, namespace, lambda ctx: ctx.exec("operand", None, ["backup"]), kubelet) as (
            admin,
            old,
        ):
            old.stop()
            assert old.join(3 * REQUEST_TIMEOUT)
            lease = admin.get(kinds.LEASE, old.lease_name, namespace)
            wait_for(lambda: CallsTheOperand.outcome, timeout=3 * REQUEST_TIMEOUT)
            assert isinstance(CallsTheOperand.outcome[0], errors.RemoteTimeout)  # no answer: perhaps still running
    finally:
        admin.delete(NODE, namespace)
    assert lease["spec"]["holderIdentity"] == "old"  # not released: the others wait for it to expire


def test_a_stopping_leader_releases_its_lease_only_once_its_call_to_the_operand_was_answered(
    audited: envtest.ControlPlane,
) -> None:
    """A call straight to the operand's Pod may change the operand until it is answered: released before, the lease
    would let a standby call it beside the call still running."""
    namespace = "operand-call-running"
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    holders: list[str] = []

    def lease_holder() -> None:
        lease = admin.get(kinds.LEASE, manager_mod.default_lease_name([CallsTheOperand.controller_name()]), namespace)
        holders.append(lease["spec"]["holderIdentity"])

    operand = HeldAnswer(on_answer=lease_holder)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "operand", "namespace": namespace}}
    admin.create({**pod, "spec": {"containers": [{"name": "operand", "image": "operand"}]}})
    status = {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
    admin.patch(kinds.BUILTIN[("v1", "Pod")], "operand", status, namespace, subresource="status")

    def flush(ctx: okt.Context) -> object:
        return ctx.http("pod/operand", "/flush", method="POST", port=operand.port, route="direct", timeout=30)

    with leading_while(audited, namespace, flush, operand) as (admin, old):
        old.stop()
        time.sleep(3 * old.grace_period)  # past the grace period: the reconcile still waits for the operand
        operand.proceed.set()
        assert old.join(3 * REQUEST_TIMEOUT)
        wait_for(lambda: CallsTheOperand.outcome, timeout=3 * REQUEST_TIMEOUT)
        lease = admin.get(kinds.LEASE, old.lease_name, namespace)
    assert CallsTheOperand.outcome == [None]
    assert holders == ["old"]  # the lease was still held when the operand answered
    assert lease["spec"]["holderIdentity"] == ""  # released once it had


def test_a_leader_that_loses_its_lease_during_its_shutdown_says_it_lost_it(audited: envtest.ControlPlane) -> None:
    """Lost while the shutdown waits for a reconcile, the lease is lost as at any other time: the caller is told, and
    exits non-zero (``okt run``) so that the operator restarts as a standby."""
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    namespace = "lost-while-stopping"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    old_client = client_of(audited, OLD)
    Stuck.waiting.clear()
    Stuck.hold.set()
    Stuck.stuck_client = old_client
    old = manager_of(old_client, namespace, "old")
    old.start()
    try:
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert Stuck.waiting.wait(30), "the old leader reconciles the widget"
        old.stop()  # the shutdown waits for the stuck reconcile (grace period: 10 s)
        lease = admin.get(kinds.LEASE, old.lease_name, namespace)
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease["spec"].update(holderIdentity="nobody", renewTime=now)
        admin.replace(kinds.LEASE, lease)
        assert old.elector is not None
        wait_for(lambda: old.elector is not None and old.elector.lost, timeout=10)
    finally:
        Stuck.hold.clear()
        old.stop()
        assert old.join(15)
    assert old.lost_leadership
    assert admin.get(kinds.LEASE, old.lease_name, namespace)["spec"]["holderIdentity"] == "nobody"


class LeaseCut(kube_client.Client):
    """okt's client, whose requests for the Lease fail once :attr:`cut` is set: the leader's renewals fail, and the
    lease runs out for the others, while its other requests go on."""

    cut: threading.Event

    def request(self, method: str, path: str, *, verb: str, resource: str, **options: Any) -> Any:
        if resource == kinds.LEASE.plural and self.cut.is_set():
            raise errors.ApiError.from_status(0, "Unavailable", "connection refused", method=method, url=path)
        return super().request(method, path, verb=verb, resource=resource, **options)


class SentBeforeTheDeadline(shared.WidgetReconciler):
    """In the Updater of ``old``'s first reconcile, cuts its lease requests and then creates the ConfigMap
    ``past-the-lease`` through ``relayed`` (whose bytes a :class:`Relay` holds), under the reconcile's write fence:
    a write let through while the leader still may write, whose answer cannot come before its lease runs out."""

    old: ClassVar[Any] = None
    namespace: ClassVar[str] = ""
    relayed: ClassVar[Any] = None
    outcome: ClassVar[list[BaseException | None]] = []

    def enter_in_state(self, state: okt.State, ctx: okt.Context) -> None:
        if state is okt.State.Updater and ctx.client is self.old and not self.outcome:
            self.old.cut.set()
            metadata = {"name": "past-the-lease", "namespace": self.namespace}
            try:
                self.relayed.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}, kinds.CONFIG_MAP)
            except BaseException as exc:
                self.outcome.append(exc)
                raise
            self.outcome.append(None)
        super().enter_in_state(state, ctx)


def test_a_write_on_the_wire_when_the_leader_stops_renewing_ends_before_another_replica_takes_the_lease(
    audited: envtest.ControlPlane, tmp_path: pathlib.Path
) -> None:
    """A write let through just before the renewals fail, whose bytes stay on the wire, waits for its answer no
    longer than the leader may write (its renew deadline), not the client's request timeout: it has ended when the
    next leader takes the lease over."""
    namespace = "past-the-lease"
    admin = kube_client.Client.from_kubeconfig(audited.kubeconfig)
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, kinds.NAMESPACE)
    widget_kind = admin.resolve(f"{shared.GROUP}/v1", "Widget")
    relay = Relay(audited.url)
    config = yaml.safe_load(audited.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = relay.url
    envtest.write_private(tmp_path / "relayed", yaml.safe_dump(config))
    relayed = kube_client.Client.from_kubeconfig(tmp_path / "relayed")  # the default request timeout, 30 s
    old_client = LeaseCut.from_kubeconfig(audited.kubeconfig_for(OLD))
    assert isinstance(old_client, LeaseCut)
    old_client.cut = threading.Event()
    SentBeforeTheDeadline.old, SentBeforeTheDeadline.relayed = old_client, relayed
    SentBeforeTheDeadline.namespace, SentBeforeTheDeadline.outcome = namespace, []
    relayed.get(kinds.NAMESPACE, namespace)  # a kept-alive connection, its handshake done
    relay.hold.set()
    options: dict[str, Any] = {"namespaces": [namespace], "leader_elect": True, "lease_namespace": namespace}
    old = manager_mod.Manager(old_client, [SentBeforeTheDeadline], identity="old", metrics_bind="0", **options, **LEASE)
    new = manager_mod.Manager(client_of(audited, NEW), [Stuck], identity="new", metrics_bind="0", **options, **LEASE)
    old.start()
    try:
        wait_for(lambda: old.elector is not None and old.elector.is_leader, timeout=30)
        new.start()
        shared.make_widget(admin, widget_kind, namespace, "w", size=1)
        assert relay.held.wait(30), "the reconcile's write is on the wire"
        wait_for(lambda: new.elector is not None and new.elector.is_leader, timeout=30)

        assert SentBeforeTheDeadline.outcome, "the old leader's write is still waiting for its answer"
        assert isinstance(SentBeforeTheDeadline.outcome[0], errors.Unavailable)
    finally:
        relay.close()
        for manager in (new, old):
            manager.stop()
            manager.join(15)
        relayed.close()
