"""A kube-apiserver that has just restarted, against the real one behind okt's fault proxy: it cuts every connection,
then answers a custom kind ``404 page not found`` for a moment, until its CRD handlers are loaded (the built-in kinds
at once). okt retries as any failure, the kind still served, and resumes the watch where it stood: only what changed
meanwhile is reconciled, not every primary of the kind, and no CRD is said deleted. A 404 that lasts past the
starting grace is still the kind no longer served."""

from __future__ import annotations

import concurrent.futures
import pathlib
import threading
import time
from typing import Any

import pytest
import structlog

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.runtime import backoff as backoff_mod
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import informer as informer_mod
from okt.testing import envtest, faults, wait_for
from tests.integration import service_accounts
from tests.integration.runtime import conftest as shared
from tests.integration.runtime.test_informer import eventually

pytestmark = pytest.mark.integration

STARTING = "the API server does not serve the kind yet (starting: its CRDs not loaded), retrying"
NOT_SERVED = "the API server does not serve the kind any more"


def client_through(proxy: faults.FaultProxy, plane: envtest.ControlPlane, tmp_path: pathlib.Path) -> kube_client.Client:
    return kube_client.Client.from_kubeconfig(proxy.kubeconfig(plane.kubeconfig, tmp_path / "kubeconfig-proxy"))


def said(logged: list[dict[str, Any]], event: str) -> list[str]:
    """The levels of the captured log lines that begin with ``event``, in order."""
    return [entry["log_level"] for entry in logged if entry["event"].startswith(event)]


def test_a_restarted_api_server_answering_the_primary_kind_404_a_moment_reconciles_only_what_changed_meanwhile(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    gadget_reconciler: Any,
    make_gadget: Any,
    fake_reconcile: Any,
    tmp_path: pathlib.Path,
) -> None:
    """Taken for the kind no longer served, the 404 warned of a CRD deleted, the cache refused reads of the kind, and
    the list that answered a moment later announced every primary of it: a sweep of the kind after every restart."""
    make_gadget("kept-1")
    make_gadget("kept-2")
    make_gadget("changed")
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        reconcile = fake_reconcile()
        cache = cache_mod.Cache(client, [namespace])
        controller = controller_mod.Controller(
            gadget_reconciler, client, cache, workers=2, reconcile=reconcile, record_events=False
        )
        try:
            with structlog.testing.capture_logs() as logged:
                controller.watch()
                assert cache.wait_for_sync(30)
                controller.start_workers()
                make_gadget("kept-3")  # told by the watch: the watch is open when the API server goes down
                wait_for(
                    lambda: all(reconcile.count(f"kept-{n}") == 1 for n in (1, 2, 3)) and reconcile.count("changed"),
                    timeout=30,
                    message=lambda: f"the first reconciles: {reconcile.calls}",
                )
                wait_for(lambda: shared.idle(controller), timeout=30, message="the first reconciles done")
                first = reconcile.count()

                with proxy.restarting(not_served=[gadget_kind.group]):
                    wait_for(
                        lambda: proxy.injected["404"] >= 2,
                        timeout=30,
                        message="the Gadgets' informer retried, answered 404 each time",
                    )
                    unserved_meanwhile = cache.unserved()
                    make_gadget("made-meanwhile")
                    kube.patch(gadget_kind, "changed", {"spec": {"size": 2}}, namespace)
                # Named after the kept ones: a list that announced every Gadget would tell them before this one.
                make_gadget("made-later")
                wait_for(
                    lambda: (
                        (reconcile.count("made-meanwhile"), reconcile.count("made-later")) == (1, 1)
                        and reconcile.count("changed") == 2
                    ),
                    timeout=60,
                    message=lambda: f"the changes reconciled: {reconcile.calls}",
                )
                wait_for(lambda: shared.idle(controller), timeout=30, message="the reconciles done")
        finally:
            controller.shutdown(5)
            cache.stop()
            client.close()

    assert first == 4
    assert {f"kept-{n}": reconcile.count(f"kept-{n}") for n in (1, 2, 3)} == {"kept-1": 1, "kept-2": 1, "kept-3": 1}
    assert reconcile.count() == first + 3  # made-meanwhile, changed, made-later
    assert unserved_meanwhile == []
    assert proxy.injected["restart"] == 1
    assert said(logged, NOT_SERVED) == []
    assert said(logged, STARTING)[:1] == ["info"]


def test_a_404_lasting_past_the_starting_grace_after_a_restart_is_the_kind_no_longer_served(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    tmp_path: pathlib.Path,
) -> None:
    """The CRD deleted while the API server was away: once the grace for its start is over, the kind is not served
    (warned once), and served again once the list is answered."""
    make_gadget("kept")
    told: list[tuple[str, str]] = []
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        informer = informer_mod.Informer(
            client,
            gadget_kind,
            namespace,
            on_event=lambda event, obj, old: told.append((event, obj["metadata"]["name"])),
            backoff=backoff_mod.Backoff(base=0.1, factor=2.0, cap=0.4, jitter=0.0),
            starting_grace=1.0,
        )
        try:
            with structlog.testing.capture_logs() as logged:
                informer.start()
                assert informer.has_synced.wait(30)
                make_gadget("watched")  # told by the watch: the watch is open when the API server goes down
                wait_for(lambda: ("ADDED", "watched") in told, timeout=30, message=lambda: str(told))
                with proxy.restarting(not_served=[gadget_kind.group]):
                    wait_for(lambda: not informer.served, timeout=30, message="the Gadgets reported unserved")
                wait_for(lambda: informer.served, timeout=30, message="the Gadgets served again")
        finally:
            informer.stop(5)
            client.close()

    assert said(logged, STARTING)[:1] == ["info"]
    assert said(logged, NOT_SERVED)[:1] == ["warning"]
    assert sorted(told) == [("ADDED", "kept"), ("ADDED", "watched"), ("RESYNC", "kept"), ("RESYNC", "watched")]


def test_while_the_restarted_api_server_does_not_serve_a_custom_kind_yet_no_object_of_it_reads_as_gone(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    gadget_kind: kinds.Kind,
    make_gadget: Any,
    tmp_path: pathlib.Path,
) -> None:
    """Read as a 404 about the object, the API server's "404 page not found" made get_or_none() say a Gadget that
    exists was not there, and delete() say it was already gone: a cleanup deleting through it in that moment was told
    its job was done, and its finalizer came off with the object left behind."""
    gadget = make_gadget("kept")
    name, namespace = gadget["metadata"]["name"], gadget["metadata"]["namespace"]
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        try:
            with proxy.restarting(not_served=[gadget_kind.group]):
                with pytest.raises(errors.NotServed, match="404"):
                    client.get_or_none(gadget_kind, name, namespace)
                with pytest.raises(errors.NotServed):
                    client.delete(gadget_kind, name, namespace)
            assert client.get_or_none(gadget_kind, name, namespace) is not None
            assert client.delete(gadget_kind, name, namespace) is True
            assert client.get_or_none(gadget_kind, name, namespace) is None
            assert client.delete(gadget_kind, name, namespace) is False  # a Status 404: gone indeed
        finally:
            client.close()
    assert kube.get_or_none(gadget_kind, name, namespace) is None


def test_an_operator_started_while_the_api_server_loads_its_crds_waits_for_its_kind_instead_of_being_refused(
    control_plane: envtest.ControlPlane, gadget_kind: kinds.Kind, tmp_path: pathlib.Path
) -> None:
    """Discovery read again for a few seconds, then the kind refused as if its CRD were not installed: `okt run`
    exited when started with an API server that had not loaded its CRDs yet (a cluster coming back), to be started
    again by its Deployment after a growing back-off."""
    told: list[str] = []
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                with proxy.restarting(not_served=[gadget_kind.group]):
                    checked = pool.submit(client.require_served, [gadget_kind], told.append)
                    time.sleep(5)  # past the few seconds discovery is read again for a CRD Established a moment ago
                    assert not checked.done(), checked.exception()
                checked.result(timeout=30)  # served once the block ends: no refusal
        finally:
            client.close()
    assert told == [
        f"the API server does not serve Gadget in {gadget_kind.api_version} yet, though its CRD "
        f"{gadget_kind.plural}.{gadget_kind.group} is Established: waiting up to 60 s for it to be loaded"
    ]


def test_an_operator_that_may_not_read_crds_waits_while_the_api_server_is_not_ready(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    tmp_path: pathlib.Path,
) -> None:
    """A ServiceAccount with no rule at all (discovery and /readyz are every authenticated user's): its CRD cannot be
    read, so what says the kind is coming is the API server's /readyz failing meanwhile."""
    kube.create({"metadata": {"name": "starter", "namespace": namespace}}, kinds.BUILTIN[("v1", "ServiceAccount")])
    own = service_accounts.kubeconfig_of(kube, control_plane, namespace, "starter")
    told: list[str] = []
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = kube_client.Client.from_kubeconfig(proxy.kubeconfig(own, tmp_path / "kubeconfig-starter-proxy"))
        try:
            with pytest.raises(errors.Forbidden):
                client.get(kinds.CRD, f"{gadget_kind.plural}.{gadget_kind.group}")
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                with proxy.restarting(not_served=[gadget_kind.group]):
                    checked = pool.submit(client.require_served, [gadget_kind], told.append)
                    time.sleep(5)
                    assert not checked.done(), checked.exception()
                checked.result(timeout=30)
        finally:
            client.close()
    assert told == [
        f"the API server does not serve Gadget in {gadget_kind.api_version} yet, and it is not ready (its /readyz "
        "fails): waiting up to 60 s for it to be loaded"
    ]


def test_a_stop_ends_the_wait_for_a_kind_being_loaded_at_once_with_nothing_refused(
    control_plane: envtest.ControlPlane, gadget_kind: kinds.Kind, tmp_path: pathlib.Path
) -> None:
    """The manager's stop could not end require_served's wait, up to a minute: its shutdown waited for it."""
    told: list[str] = []
    stopping = threading.Event()
    with faults.FaultProxy(control_plane.url, str(control_plane.ca_file), rate=0) as proxy:
        client = client_through(proxy, control_plane, tmp_path)
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool, proxy.restarting(not_served=[gadget_kind.group]):
                checked = pool.submit(client.require_served, [gadget_kind], told.append, stopping)
                wait_for(lambda: len(told) == 1, timeout=30)
                stopping.set()
                # Still not served, the wait 60 s long: only the stop ends it, and it refuses nothing.
                assert checked.result(timeout=10) is None
        finally:
            client.close()


def test_a_real_api_server_restarted_never_has_a_custom_kind_read_as_no_longer_served(
    control_plane: envtest.ControlPlane,
    gadget_kind: kinds.Kind,
    namespace: str,
    kube: kube_client.Client,
    make_gadget: Any,
) -> None:
    """The kube-apiserver itself restarted (not a proxy's stand-in): until its CRDs are loaded it answers a custom kind
    ``503 server is starting`` (Kubernetes 1.16 on), retried as any outage, and now and then, on a loaded machine, a
    ``404`` first (the routing race kubernetes/kubernetes#115241 names): the starting grace takes that one for a start.
    Either way the kind is never said to be no longer served, and its watch goes on."""
    told: list[str] = []
    informer = informer_mod.Informer(
        kube,
        gadget_kind,
        namespace,
        on_event=lambda event, obj, old: told.append(obj["metadata"]["name"]),
        backoff=backoff_mod.Backoff(base=0.05, factor=1.0, cap=0.05, jitter=0.0),  # to be there as it starts
    )
    try:
        with structlog.testing.capture_logs() as logged:
            informer.start()
            assert informer.has_synced.wait(30)
            control_plane.restart_apiserver()
            wait_for(lambda: informer.reconnects >= 1, timeout=30, message="the watch broken by the restart")
            eventually(lambda: make_gadget("after"))
            wait_for(lambda: "after" in told, timeout=30, message="watching again")
    finally:
        informer.stop(5)

    assert said(logged, NOT_SERVED) == []
    assert said(logged, STARTING) in ([], ["info"])  # a 404 while it starts, when there is one, is said once
    assert informer.served
