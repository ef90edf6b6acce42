"""A Secret named in a primary's spec, watched on a real kube-apiserver: its creation, change and deletion reconcile
exactly the Gadgets that name it, through an index over the cached Gadgets, and the index holds no stale entry."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

import okt
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import watches
from okt.runtime import cache as cache_mod
from okt.runtime import controller as controller_mod
from okt.runtime import manager as manager_mod
from okt.testing import envtest, wait_for
from tests.integration.runtime import conftest as shared
from tests.integration.runtime import test_controller

pytestmark = pytest.mark.integration

SECRET = kinds.Kind("v1", "Secret", "secrets")


def secret_of(obj: Mapping[str, Any]) -> list[str]:
    """A Gadget's index value: the Secret its ``spec.secretName`` names, as ``namespace/name``."""
    name = (obj.get("spec") or {}).get("secretName")
    return [f"{obj['metadata']['namespace']}/{name}"] if name else []


class SecretUser(shared.GadgetReconciler):
    """Gadgets reconciled when the Secret named in their ``spec.secretName`` is created, changed or deleted."""

    indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"secret": secret_of}
    watches = (okt.watch("secrets", map=lambda secret, ctx: ctx.index("secret", okt.ref_of(secret))),)


def secret(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": data,
    }


def indexed(controller: controller_mod.Controller, value: str) -> list[str]:
    found = controller.cache.by_index(controller.kind, "gadget/secret", value)
    assert found is not None, "the Gadgets' informer keeps the index"
    return sorted(o["metadata"]["name"] for o in found)


def test_a_secret_created_changed_and_deleted_after_its_gadgets_reconciles_exactly_those_naming_it(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    for name, secret_name in (("a", "creds"), ("b", "creds"), ("c", "other")):
        make_gadget(name, secretName=secret_name)
    make_gadget("d")  # names no Secret
    reconcile = shared.FakeReconcile()
    manager = start_manager(SecretUser, reconcile=reconcile)
    wait_for(lambda: manager.working and all(reconcile.count(n) == 1 for n in "abcd"), timeout=20)

    # Each step ends with a change of "other", which the same informer tells after those of "creds": once c is
    # reconciled again, the change of "creds" before it was mapped too.
    kube.create(secret(namespace, "creds", password="s3cret"), SECRET)  # the Gadgets waiting for it
    kube.create(secret(namespace, "other", password="x"), SECRET)
    wait_for(lambda: (reconcile.count("a"), reconcile.count("b"), reconcile.count("c")) == (2, 2, 2), timeout=10)
    kube.patch(SECRET, "creds", {"stringData": {"password": "changed"}}, namespace)
    kube.patch(SECRET, "other", {"stringData": {"password": "y"}}, namespace)
    wait_for(lambda: (reconcile.count("a"), reconcile.count("b"), reconcile.count("c")) == (3, 3, 3), timeout=10)
    kube.delete(SECRET, "creds", namespace)
    kube.patch(SECRET, "other", {"stringData": {"password": "z"}}, namespace)
    wait_for(lambda: (reconcile.count("a"), reconcile.count("b"), reconcile.count("c")) == (4, 4, 4), timeout=10)
    manager.stop()
    assert manager.join(15)

    assert {n: reconcile.count(n) for n in "abcd"} == {"a": 4, "b": 4, "c": 4, "d": 1}


def test_a_deleted_gadget_leaves_the_index_and_is_not_reconciled_by_its_secrets_changes(
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    kube.create(secret(namespace, "creds"), SECRET)
    make_gadget("a", secretName="creds")
    make_gadget("b", secretName="creds")
    reconcile = shared.FakeReconcile()
    manager = start_manager(SecretUser, reconcile=reconcile)
    wait_for(lambda: manager.working and reconcile.count("a") == 1 and reconcile.count("b") == 1, timeout=20)
    controller = manager.controllers[0]
    assert indexed(controller, f"{namespace}/creds") == ["a", "b"]

    kube.delete(gadget_kind, "a", namespace)
    wait_for(lambda: indexed(controller, f"{namespace}/creds") == ["b"], timeout=10)
    kube.patch(SECRET, "creds", {"stringData": {"k": "v"}}, namespace)
    wait_for(lambda: reconcile.count("b") == 2, timeout=10)
    wait_for(lambda: shared.idle(controller), timeout=10)
    manager.stop()
    assert manager.join(15)

    assert reconcile.count("a") == 1


def test_a_mapping_that_returns_junk_is_counted_and_the_keys_beside_it_are_reconciled(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    class Junk(SecretUser):
        watches = (
            okt.watch(
                "secrets",
                map=lambda s, ctx: [42, (namespace, ""), *ctx.index("secret", okt.ref_of(s)), "a"],
            ),
        )

    kube.create(secret(namespace, "creds"), SECRET)
    make_gadget("a", secretName="creds")
    reconcile = shared.FakeReconcile()
    manager = start_manager(Junk, reconcile=reconcile)
    wait_for(lambda: manager.working and reconcile.count("a") == 1, timeout=20)
    controller = manager.controllers[0]
    sample = controller.metrics.registry.get_sample_value
    labels = {"controller": controller.name, "kind": str(SECRET)}
    listed = sample("okt_watch_map_errors_total", labels)
    kube.patch(SECRET, "creds", {"stringData": {"k": "v"}}, namespace)
    wait_for(lambda: reconcile.count("a") == 2, timeout=10)
    after = sample("okt_watch_map_errors_total", labels)
    manager.stop()
    assert manager.join(15)

    assert listed == 1  # the first list's mapping of creds
    assert after == 3  # and its change: the new and the old object, each mapped once


def test_a_secret_of_a_namespace_the_operator_does_not_watch_reconciles_nothing(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
    start_manager: Callable[..., manager_mod.Manager],
) -> None:
    """The watched kind is watched in the operator's namespaces (``-n``) only, as its primaries and children: a
    Gadget naming a Secret of another namespace is not woken by its changes."""
    other = f"{namespace}-far"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, kinds.NAMESPACE)
    try:

        def far_secret_of(obj: Mapping[str, Any]) -> list[str]:
            name = (obj.get("spec") or {}).get("secretName")
            return [f"{other}/{name}"] if name else []

        class Far(SecretUser):
            indexes: ClassVar[Mapping[str, watches.IndexFunction]] = {"secret": far_secret_of}

        kube.create(secret(other, "creds"), SECRET)
        kube.create(secret(namespace, "near"), SECRET)
        make_gadget("a", secretName="creds")
        reconcile = shared.FakeReconcile()
        manager = start_manager(Far, reconcile=reconcile)
        wait_for(lambda: manager.working and reconcile.count("a") == 1, timeout=20)
        controller = manager.controllers[0]
        kube.patch(SECRET, "creds", {"stringData": {"k": "v"}}, other)
        kube.patch(SECRET, "near", {"stringData": {"k": "v"}}, namespace)
        wait_for(lambda: controller.cache.get(SECRET, "near", namespace) is not None, timeout=10)
        wait_for(lambda: shared.idle(controller), timeout=10)
        assert [i.namespace for i in controller.cache.informers(SECRET)] == [namespace]
        manager.stop()
        assert manager.join(15)
    finally:
        kube.delete(kinds.NAMESPACE, other)

    assert reconcile.count("a") == 1


def test_the_index_after_a_relist_holds_what_the_gadgets_name_now(
    control_plane: envtest.ControlPlane,
    kube: kube_client.Client,
    namespace: str,
    gadget_kind: kinds.Kind,
    make_gadget: Callable[..., dict[str, Any]],
) -> None:
    """The API server restarts and the watches are answered 410 Gone: a Gadget that changed its Secret and one deleted
    meanwhile are known from the relist only, and the index follows it (no key of either left under the old Secret)."""
    kube.create(secret(namespace, "old"), SECRET)
    kube.create(secret(namespace, "new"), SECRET)
    make_gadget("moving", secretName="old")
    make_gadget("going", secretName="old")
    make_gadget("staying", secretName="old")
    reconcile = shared.FakeReconcile()
    client = test_controller.HeldWatches(kube)
    cache = cache_mod.Cache(client, [namespace])  # type: ignore[arg-type]
    controller = controller_mod.Controller(SecretUser, kube, cache, workers=1, reconcile=reconcile)
    try:
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        wait_for(lambda: all(reconcile.count(n) == 1 for n in ("moving", "going", "staying")), timeout=10)
        assert indexed(controller, f"{namespace}/old") == ["going", "moving", "staying"]

        client.held = True
        elsewhere = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "default"}}
        kube.create(elsewhere, kinds.CONFIG_MAP)  # the cluster's resourceVersion moves past the informers'
        kube.delete(kinds.CONFIG_MAP, "elsewhere", "default")
        control_plane.restart_apiserver()
        wait_for(lambda: client.waiting >= 2, timeout=30, message="the informers to try reconnecting")
        wait_for(lambda: kube.get_or_none(gadget_kind, "moving", namespace) is not None, timeout=30)
        kube.patch(gadget_kind, "moving", {"spec": {"secretName": "new"}}, namespace)
        kube.delete(gadget_kind, "going", namespace)
        client.release.set()

        wait_for(lambda: reconcile.count("moving") == 2, timeout=30, message="the moved Gadget's reconcile")
        wait_for(lambda: indexed(controller, f"{namespace}/old") == ["staying"], timeout=10)
        assert indexed(controller, f"{namespace}/new") == ["moving"]
        before = {n: reconcile.count(n) for n in ("moving", "going", "staying")}
        kube.patch(SECRET, "old", {"stringData": {"k": "v"}}, namespace)
        wait_for(lambda: reconcile.count("staying") == before["staying"] + 1, timeout=10)
        wait_for(lambda: shared.idle(controller), timeout=10)
        assert {n: reconcile.count(n) for n in ("moving", "going")} == {"moving": before["moving"], "going": 1}
    finally:
        client.release.set()
        controller.shutdown(5)
        cache.stop()


def test_a_lookup_while_the_gadgets_are_listed_finds_no_more_than_the_store_holds(
    kube: kube_client.Client,
    namespace: str,
    make_gadget: Callable[..., dict[str, Any]],
) -> None:
    """An index looked up before its kind's cache synced answers from what is stored so far, never from an earlier
    state: every Secret's first-list mapping runs, and the sweep reconciles each Gadget once."""
    kube.create(secret(namespace, "creds"), SECRET)
    for name in ("a", "b", "c"):
        make_gadget(name, secretName="creds")
    seen: list[list[str]] = []
    lock = threading.Lock()

    def recording(s: Mapping[str, Any], ctx: watches.MapContext) -> list[dict[str, Any]]:
        found = ctx.index("secret", okt.ref_of(s))
        with lock:
            seen.append(sorted(o["metadata"]["name"] for o in found))
        return found

    class Recording(SecretUser):
        watches = (okt.watch("secrets", map=recording),)

    reconcile = shared.FakeReconcile()
    cache = cache_mod.Cache(kube, [namespace])
    controller = controller_mod.Controller(Recording, kube, cache, workers=1, reconcile=reconcile)
    try:
        controller.watch()
        assert cache.wait_for_sync(30)
        controller.start_workers()
        wait_for(lambda: all(reconcile.count(n) >= 1 for n in "abc"), timeout=10)
        wait_for(lambda: shared.idle(controller), timeout=10)
    finally:
        controller.shutdown(5)
        cache.stop()

    assert seen and all(set(names) <= {"a", "b", "c"} for names in seen)
    assert {n: reconcile.count(n) for n in "abc"} == {"a": 1, "b": 1, "c": 1}
