"""okt.testing.FakeClient side by side with okt's client on the API server: one sequence of calls, two transcripts.

Each case is a sequence of requests a reconciler (or its test) sends. It runs once on a FakeClient and once on the real
control plane, each answer written down as the transcript of the run: the object returned (or the list, or what a
delete answered), or the error raised (its class, status, API reason and the fields its causes name). The transcripts
must be the same once what legitimately differs is put aside: uids, timestamps, a generated name's random suffix, the
resourceVersion's value (but whether it changed is kept: each value is written as the order of its first appearance in
the run) and ``managedFields`` (the fake keeps none, as its documentation says). Generations are compared as they are.

A difference the fake's documentation lists as a limit (strategic merge patches, the defaults the server fills in
beyond okt.testing.defaults' table, the status subresource of a kind that has none...) is left out of these sequences;
any other difference is a bug of the fake.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import FakeClient, waiting
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind
WIDGET = kinds.Kind(f"{shared.GROUP}/v1", "Widget", "widgets")
CONFIG_MAP = kinds.CONFIG_MAP
SECRET = kinds.BUILTIN[("v1", "Secret")]
DEPLOYMENT = kinds.BUILTIN[("apps/v1", "Deployment")]
REPLICA_SET = kinds.BUILTIN[("apps/v1", "ReplicaSet")]
DAEMON_SET = kinds.BUILTIN[("apps/v1", "DaemonSet")]
STATEFUL_SET = kinds.BUILTIN[("apps/v1", "StatefulSet")]
JOB = kinds.BUILTIN[("batch/v1", "Job")]
SERVICE = kinds.BUILTIN[("v1", "Service")]
CLAIM = kinds.BUILTIN[("v1", "PersistentVolumeClaim")]
POD_TEMPLATE = kinds.Kind("v1", "PodTemplate", "podtemplates")
CRON_JOB = kinds.BUILTIN[("batch/v1beta1", "CronJob")]
_TIMES = ("creationTimestamp", "deletionTimestamp")
GARBAGE_COLLECTED_WITHIN = 300.0
"""How long the API server's garbage collector is given to delete or orphan an owner's dependents: a bound only (the
wait ends as soon as they are), and long, so that a loaded machine does not fail the comparison."""


class Run:
    """One run of a sequence on one client: what it asked and what it was answered, normalised as it goes."""

    def __init__(self, client: kube_client.Client, namespace: str) -> None:
        self.client = client
        self.ns = namespace
        self.transcript: list[tuple[str, Any]] = []
        self._uids: dict[str, str] = {}
        self._versions: dict[str, str] = {}

    def step(self, label: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Send one request, ``call(*args, **kwargs)``: its answer (None when it raised) goes on, its normalised form
        into the transcript."""
        try:
            answer = call(*args, **kwargs)
        except errors.ApiError as exc:
            # The API server may name one cause twice (validated twice): what is refused is the set of them.
            causes = sorted({(cause.reason, cause.field) for cause in exc.causes})
            self.transcript.append((label, ("raised", type(exc).__name__, exc.status, exc.api_reason, causes)))
            return None
        self.transcript.append((label, self._normal(answer)))
        return answer

    def eventually(self, label: str, call: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
        """What ``call`` answers once ``done`` says so: the last answer goes into the transcript.

        The garbage collector works apart from the request on the API server, in its own time (a minute and more on a
        loaded machine): the server is polled for up to :data:`GARBAGE_COLLECTED_WITHIN`. The fake collects at once,
        as its documentation says: its first answer is the one written down, settled or not, and a transcript that
        differs from the server's fails the test.
        """
        if isinstance(self.client, FakeClient):
            answer = call()
            self.transcript.append((label, self._normal(answer)))
            return answer
        answers: list[Any] = []

        def settled() -> bool:
            answers.append(call())
            return done(answers[-1])

        waiting.wait_for(settled, timeout=GARBAGE_COLLECTED_WITHIN, interval=0.2, message=label)
        self.transcript.append((label, self._normal(answers[-1])))
        return answers[-1]

    def cm(self, name: str, **fields: Any) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": self.ns}, **fields}

    def widget(self, name: str, spec: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        meta = {"name": name, "namespace": self.ns}
        return {"apiVersion": WIDGET.api_version, "kind": WIDGET.kind, "metadata": meta, "spec": spec or {}, **fields}

    def _normal(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._normal(item) for item in value]
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list):  # list(): items, version
            return [self._normal(item) for item in value[0]]
        if not isinstance(value, dict):
            return value
        out = {}
        for key, item in value.items():
            if key == "metadata" and isinstance(item, dict):
                out[key] = self._meta(item)
            else:
                out[key] = self._normal(item)
        return out

    def _meta(self, meta: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in meta.items():
            if key in ("managedFields", "selfLink"):
                continue
            if key in _TIMES:
                out[key] = "<time>"
            elif key == "uid":
                out[key] = self._uid(value)
            elif key == "resourceVersion":
                out[key] = self._versions.setdefault(value, f"rv{len(self._versions) + 1}")
            elif key == "name" and meta.get("generateName") and value.startswith(meta["generateName"]):
                suffix = value[len(meta["generateName"]) :]
                out[key] = meta["generateName"] + (
                    "<5 random>" if re.fullmatch("[a-z0-9]{5}", suffix) else f"<{suffix}>"
                )
            elif key == "ownerReferences":
                out[key] = [{**ref, "uid": self._uid(ref.get("uid"))} for ref in value]
            else:
                out[key] = self._normal(value)
        return out

    def _uid(self, uid: str) -> str:
        return self._uids.setdefault(uid, f"uid{len(self._uids) + 1}")


def _names(client: kube_client.Client, namespace: str, selector: str) -> list[str]:
    return [item["metadata"]["name"] for item in client.list(CONFIG_MAP, namespace, label_selector=selector)[0]]


# -- the sequences -------------------------------------------------------------------------------------------------


def create_get_list(run: Run) -> None:
    c = run.client
    for name, labels in [("a", {"app": "web", "tier": "front"}), ("b", {"app": "db"}), ("c", {"tier": "front"})]:
        run.step(f"create {name}", c.create, run.cm(name, data={"k": name}) | _labelled(run, name, labels))
    run.step("get", lambda: c.get(CONFIG_MAP, "a", run.ns))
    for selector in ["app=web", "app in (web,db)", "app!=web", "!app", "app", "tier=front,app=web", "app notin (db)"]:
        run.step(f"list {selector}", _names, c, run.ns, selector)
    run.step("list", lambda: c.list(WIDGET, run.ns))


def _labelled(run: Run, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": run.ns, "labels": labels}}


def generate_name(run: Run) -> None:
    c = run.client
    run.step("create cm", lambda: c.create({**run.cm(""), "metadata": {"generateName": "cfg-", "namespace": run.ns}}))
    body = run.widget("", {"size": 1})
    body["metadata"] = {"generateName": "w-", "namespace": run.ns}
    run.step("create widget", lambda: c.create(body))
    run.step("both name given", lambda: c.create({**run.cm("x"), "metadata": {**body["metadata"], "name": "named"}}))


def replace_with_a_stale_version(run: Run) -> None:
    c = run.client
    created = run.step("create", lambda: c.create(run.widget("w", {"size": 1})))
    run.step("patch", lambda: c.patch(WIDGET, "w", {"spec": {"size": 2}}, run.ns))
    run.step("replace stale", lambda: c.replace(WIDGET, {**created, "spec": {"size": 3}}))
    live = run.step("get", lambda: c.get(WIDGET, "w", run.ns))
    run.step("replace", lambda: c.replace(WIDGET, {**live, "spec": {"size": 3}}))
    run.step("replace same", lambda: c.replace(WIDGET, c.get(WIDGET, "w", run.ns)))
    cm = run.step("create cm", lambda: c.create(run.cm("c", data={"a": "1"})))
    run.step("replace cm without version", lambda: c.replace(CONFIG_MAP, run.cm("c", data={"a": "2"})))
    run.step("replace cm stale", lambda: c.replace(CONFIG_MAP, {**cm, "data": {"a": "3"}}))
    run.step("replace missing", lambda: c.replace(CONFIG_MAP, run.cm("nope", data={})))


def merge_and_json_patches(run: Run) -> None:
    c = run.client
    run.step("create", lambda: c.create(run.widget("w", {"size": 1, "tags": ["a"], "extra": {"x": "1", "y": "2"}})))
    run.step("merge", lambda: c.patch(WIDGET, "w", {"spec": {"tags": ["b", "c"], "extra": {"x": None}}}, run.ns))
    run.step("merge nothing", lambda: c.patch(WIDGET, "w", {"spec": {"size": 1}}, run.ns))
    run.step("merge labels", lambda: c.patch(WIDGET, "w", {"metadata": {"labels": {"l": "1"}}}, run.ns))
    run.step("merge label gone", lambda: c.patch(WIDGET, "w", {"metadata": {"labels": {"l": None}}}, run.ns))
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/spec/size", "value": 1},
        {"op": "add", "path": "/spec/tags/-", "value": "d"},
        {"op": "remove", "path": "/spec/tags/0"},
        {"op": "replace", "path": "/spec/size", "value": 5},
        {"op": "add", "path": "/spec/new", "value": {"k": [1, 2]}},
    ]
    run.step("json", lambda: c.patch(WIDGET, "w", ops, run.ns, patch_type="json"))
    failing = [{"op": "test", "path": "/spec/size", "value": 1}, {"op": "replace", "path": "/spec/size", "value": 9}]
    run.step("json test fails", lambda: c.patch(WIDGET, "w", failing, run.ns, patch_type="json"))
    run.step(
        "json remove missing",
        lambda: c.patch(WIDGET, "w", [{"op": "remove", "path": "/spec/none"}], run.ns, patch_type="json"),
    )
    run.step("merge missing", lambda: c.patch(WIDGET, "nope", {"spec": {}}, run.ns))
    run.step("get", lambda: c.get(WIDGET, "w", run.ns))


def apply_by_managers(run: Run) -> None:
    c = run.client
    run.step("a applies", lambda: c.apply(run.widget("w", {"size": 1, "x": "1", "y": "2"}), field_manager="a"))
    run.step("a drops y", lambda: c.apply(run.widget("w", {"size": 1, "x": "1"}), field_manager="a"))
    run.step("b applies z", lambda: c.apply(run.widget("w", {"z": "3"}), field_manager="b"))
    run.step("a again", lambda: c.apply(run.widget("w", {"size": 1, "x": "1"}), field_manager="a"))
    run.step("b forces size", lambda: c.apply(run.widget("w", {"z": "3", "size": 2}), field_manager="b"))
    run.step("a drops size", lambda: c.apply(run.widget("w", {"x": "1"}), field_manager="a"))
    run.step("b drops size", lambda: c.apply(run.widget("w", {"z": "3"}), field_manager="b"))
    run.step(
        "a labels",
        lambda: c.apply(
            run.widget("w", {"x": "1"}, metadata={"name": "w", "namespace": run.ns, "labels": {"l": "1"}}),
            field_manager="a",
        ),
    )
    run.step("a no labels", lambda: c.apply(run.widget("w", {"x": "1"}), field_manager="a"))
    run.step("a status", lambda: c.apply(run.widget("w", status={"ok": True}), field_manager="a", subresource="status"))
    run.step("get", lambda: c.get(WIDGET, "w", run.ns))
    run.step("cm apply", lambda: c.apply(run.cm("c", data={"a": "1", "b": "2"}), field_manager="a"))
    run.step("cm other", lambda: c.patch(CONFIG_MAP, "c", {"data": {"b": "2", "c": "3"}}, run.ns))
    run.step("cm apply less", lambda: c.apply(run.cm("c", data={}), field_manager="a"))


def apply_conflicts(run: Run) -> None:
    """An apply without force that sets a field another manager owns to another value is refused, field by field,
    and stores nothing; the same value is shared; force takes the fields over. (A refusal is written down with its
    message and its causes' messages, which name the other manager and how it wrote the field.)"""
    c = run.client

    def apply(label: str, body: dict[str, Any], manager: str, *, force: bool = False, part: Any = None) -> None:
        def call() -> Any:
            try:
                answer = c.apply(body, field_manager=manager, force=force)
            except errors.Conflict as exc:
                causes = [(cause.reason, cause.message, cause.field) for cause in exc.causes]
                return ("refused", exc.status, exc.api_reason, exc.api_message, causes)
            return part(answer) if part else answer

        run.step(label, call)

    # A write that changes only who owns what is a write: a new resourceVersion, the object as it was.
    apply("a applies", run.cm("c", data={"x": "1", "y": "2"}), "a")
    apply("b applies x as a does", run.cm("c", data={"x": "1"}), "b")
    apply("b applies x again", run.cm("c", data={"x": "1"}), "b")
    apply("d applies only the name", run.cm("c"), "d")
    apply("b applies another x", run.cm("c", data={"x": "2"}), "b")
    apply("b applies another x and y", run.cm("c", data={"x": "2", "y": "3", "w": "0"}), "b")
    run.step("c patches z", lambda: c.patch(CONFIG_MAP, "c", {"data": {"z": "1"}}, run.ns, field_manager="c"))
    apply("b applies another z", run.cm("c", data={"z": "2"}), "b")
    apply("b applies z as c wrote it", run.cm("c", data={"x": "1", "z": "1"}), "b")
    apply("a drops x, b keeps it", run.cm("c", data={"y": "2"}), "a")
    apply("b forces x as it is", run.cm("c", data={"x": "1", "y": "2", "z": "1"}), "b", force=True)
    apply("a applies another x", run.cm("c", data={"x": "3", "y": "2"}), "a")
    apply("b forces x and z", run.cm("c", data={"x": "2", "z": "2"}), "b", force=True)
    apply("a applies x again", run.cm("c", data={"x": "1", "y": "2"}), "a")
    apply("c applies z, no longer its own", run.cm("c", data={"z": "1"}), "c")
    run.step("get", lambda: c.get(CONFIG_MAP, "c", run.ns))

    def deployment(images: list[str]) -> dict[str, Any]:
        containers = [{"name": image.split(":")[0], "image": image} for image in images]
        body = _workload(run, "Deployment", "d", "a")
        body["spec"]["template"]["spec"]["containers"] = containers
        return body

    images = {"part": lambda d: {k["name"]: k.get("image") for k in d["spec"]["template"]["spec"]["containers"]}}
    apply("a applies a deployment", deployment(["app:1"]), "a", **images)
    apply("b applies app as a does", deployment(["app:1"]), "b", **images)
    apply("b applies another app", deployment(["app:2"]), "b", **images)
    apply("b adds side", deployment(["side:1"]), "b", **images)
    apply("a applies side", deployment(["app:1", "side:2"]), "a", **images)
    apply("b forces app", deployment(["app:2"]), "b", force=True, **images)
    port = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": run.ns}}
    names = {"part": lambda s: [p.get("name") for p in s["spec"]["ports"]]}
    # (Kubernetes 1.20 cannot apply a port without its protocol: a 500, where the fake takes it as TCP.)
    web, http = ({"port": 80, "protocol": "TCP", "name": name} for name in ("web", "http"))
    apply("a applies a port", {**port, "spec": {"ports": [web]}}, "a", **names)
    apply("b names it", {**port, "spec": {"ports": [http]}}, "b", **names)


def secret_string_data(run: Run) -> None:
    """A Secret's ``stringData`` is written into its ``data`` (base64, over a key ``data`` holds too) by every write,
    and never answered nor stored."""
    c = run.client
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": run.ns}, "type": "Opaque"}
    run.step("create", lambda: c.create({**secret, "data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "y"}}))
    run.step("get", lambda: c.get(SECRET, "s", run.ns))
    run.step("merge patch", lambda: c.patch(SECRET, "s", {"stringData": {"c": "zé"}}, run.ns))
    run.step("same value", lambda: c.patch(SECRET, "s", {"stringData": {"c": "zé"}}, run.ns))
    live = run.step("get again", lambda: c.get(SECRET, "s", run.ns))
    run.step("update", lambda: c.replace(SECRET, {**live, "stringData": {"a": ""}}))
    run.step(
        "json patch",
        lambda: c.patch(
            SECRET, "s", [{"op": "add", "path": "/stringData", "value": {"d": "1"}}], run.ns, patch_type="json"
        ),
    )
    run.step("apply", lambda: c.apply({**secret, "stringData": {"e": "2"}}, field_manager="a"))
    run.step("apply without it", lambda: c.apply({**secret, "data": {"f": "eA=="}}, field_manager="a"))
    run.step(
        "apply creates",
        lambda: c.apply(
            {**secret, "metadata": {"name": "t", "namespace": run.ns}, "stringData": {"g": "3"}}, field_manager="a"
        ),
    )
    run.step("not a string", lambda: c.patch(SECRET, "s", {"stringData": {"h": 4}}, run.ns))
    run.step("list", lambda: c.list(SECRET, run.ns, label_selector=""))


def status_subresource(run: Run) -> None:
    c = run.client
    run.step("create with status", lambda: c.create(run.widget("w", {"size": 1}, status={"phase": "x"})))
    run.step("status patch", lambda: c.patch(WIDGET, "w", {"status": {"phase": "y"}}, run.ns, subresource="status"))
    run.step(
        "status patch with spec",
        lambda: c.patch(WIDGET, "w", {"spec": {"size": 9}, "status": {"phase": "z"}}, run.ns, subresource="status"),
    )
    run.step("main patch with status", lambda: c.patch(WIDGET, "w", {"status": {"phase": "q"}}, run.ns))
    run.step(
        "main patch of both", lambda: c.patch(WIDGET, "w", {"spec": {"size": 2}, "status": {"phase": "q"}}, run.ns)
    )
    live = run.step("get", lambda: c.get(WIDGET, "w", run.ns))
    run.step("status replace", lambda: c.replace(WIDGET, {**live, "spec": {"size": 7}, "status": {"r": 1}}, "status"))
    run.step("status get", lambda: c.get(WIDGET, "w", run.ns, subresource="status"))
    meta = {"labels": {"l": "1"}, "annotations": {"a": "1"}, "finalizers": ["x.io/f"]}
    run.step(
        "status patch with metadata",
        lambda: c.patch(WIDGET, "w", {"metadata": meta, "status": {"m": 1}}, run.ns, subresource="status"),
    )
    run.step("status of missing", lambda: c.patch(WIDGET, "nope", {"status": {}}, run.ns, subresource="status"))


def generation(run: Run) -> None:
    c = run.client
    run.step("create", lambda: c.create(run.widget("w", {"size": 1})))
    run.step("spec", lambda: c.patch(WIDGET, "w", {"spec": {"size": 2}}, run.ns))
    run.step("top-level field", lambda: c.patch(WIDGET, "w", {"other": {"a": 1}}, run.ns))
    run.step("labels", lambda: c.patch(WIDGET, "w", {"metadata": {"labels": {"a": "b"}}}, run.ns))
    run.step("annotations", lambda: c.patch(WIDGET, "w", {"metadata": {"annotations": {"a": "b"}}}, run.ns))
    run.step("finalizers", lambda: c.patch(WIDGET, "w", {"metadata": {"finalizers": ["x.io/f"]}}, run.ns))
    run.step("status", lambda: c.patch(WIDGET, "w", {"status": {"a": 1}}, run.ns, subresource="status"))
    run.step("delete", lambda: c.delete(WIDGET, "w", run.ns))
    run.step("get deleting", lambda: c.get(WIDGET, "w", run.ns))
    run.step("spec while deleting", lambda: c.patch(WIDGET, "w", {"spec": {"size": 3}}, run.ns))
    run.step("last finalizer", lambda: c.patch(WIDGET, "w", {"metadata": {"finalizers": None}}, run.ns))
    run.step("gone", lambda: c.get_or_none(WIDGET, "w", run.ns))


def finalizers(run: Run) -> None:
    _finalizers_of(run, WIDGET, run.widget("o", {"a": 1}))
    _finalizers_of(run, CONFIG_MAP, run.cm("o"))


def _finalizers_of(run: Run, kind: kinds.Kind, body: dict[str, Any]) -> None:
    c = run.client
    body["metadata"]["finalizers"] = ["x.io/a", "x.io/b"]
    run.step(f"{kind.kind} create", lambda: c.create(body))
    run.step(f"{kind.kind} delete", lambda: c.delete(kind, "o", run.ns))
    run.step(f"{kind.kind} get", lambda: c.get(kind, "o", run.ns))
    run.step(f"{kind.kind} delete again", lambda: c.delete(kind, "o", run.ns))
    run.step(f"{kind.kind} get again", lambda: c.get(kind, "o", run.ns))
    more = {"metadata": {"finalizers": ["x.io/a", "x.io/b", "x.io/c"]}}
    run.step(f"{kind.kind} add one", lambda: c.patch(kind, "o", more, run.ns))
    run.step(f"{kind.kind} one less", lambda: c.patch(kind, "o", {"metadata": {"finalizers": ["x.io/b"]}}, run.ns))
    ops = [{"op": "remove", "path": "/metadata/finalizers/0"}]
    run.step(f"{kind.kind} the last", lambda: c.patch(kind, "o", ops, run.ns, patch_type="json"))
    run.step(f"{kind.kind} gone", lambda: c.get_or_none(kind, "o", run.ns))
    run.step(f"{kind.kind} delete gone", lambda: c.delete(kind, "o", run.ns))


def delete_preconditions(run: Run) -> None:
    c = run.client
    created = run.step("create", lambda: c.create(run.cm("c", data={"a": "1"})))
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    run.step("patch", lambda: c.patch(CONFIG_MAP, "c", {"data": {"a": "2"}}, run.ns))
    run.step("wrong uid", lambda: c.delete(CONFIG_MAP, "c", run.ns, uid="00000000-0000-0000-0000-000000000000"))
    run.step("stale version", lambda: c.delete(CONFIG_MAP, "c", run.ns, resource_version=version))
    live = run.step("get", lambda: c.get(CONFIG_MAP, "c", run.ns))
    run.step(
        "right",
        lambda: c.delete(CONFIG_MAP, "c", run.ns, uid=uid, resource_version=live["metadata"]["resourceVersion"]),
    )
    run.step("gone", lambda: c.get_or_none(CONFIG_MAP, "c", run.ns))
    run.step("again", lambda: c.delete(CONFIG_MAP, "c", run.ns, uid=uid))


def owner_references(run: Run) -> None:
    _owned_then_deleted(run, "Background")
    _owned_then_deleted(run, "Orphan")


def _owned_then_deleted(run: Run, propagation: str) -> None:
    c = run.client
    owner = run.step("owner", lambda: c.create(run.widget("owner", {"a": 1})))
    ref = {"apiVersion": WIDGET.api_version, "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    for name, extra in [("plain", {}), ("controlled", {"controller": True, "blockOwnerDeletion": True})]:
        body = run.cm(name)
        body["metadata"]["ownerReferences"] = [{**ref, **extra}]
        run.step(f"dependent {name}", c.create, body)
    run.step(f"delete {propagation}", lambda: c.delete(WIDGET, "owner", run.ns, propagation=propagation))
    run.eventually(f"owner gone {propagation}", lambda: c.get_or_none(WIDGET, "owner", run.ns), lambda o: o is None)
    dependents = ("plain", "controlled")
    if propagation == "Orphan":
        run.eventually(
            "orphans",
            lambda: [c.get_or_none(CONFIG_MAP, name, run.ns) for name in dependents],
            lambda found: all(d is not None and "ownerReferences" not in d["metadata"] for d in found),
        )
    else:
        run.eventually(
            "dependents gone",
            lambda: [c.get_or_none(CONFIG_MAP, name, run.ns) for name in dependents],
            lambda found: found == [None, None],
        )


def error_answers(run: Run) -> None:
    c = run.client
    run.step("get missing", lambda: c.get(CONFIG_MAP, "nope", run.ns))
    run.step("get_or_none missing", lambda: c.get_or_none(WIDGET, "nope", run.ns))
    run.step("create", lambda: c.create(run.cm("c")))
    run.step("create again", lambda: c.create(run.cm("c")))
    run.step("bad name", lambda: c.create(run.cm("Not_A_Name")))
    run.step(
        "bad label",
        lambda: c.create({**run.cm("l"), "metadata": {"name": "l", "namespace": run.ns, "labels": {"a": "-x"}}}),
    )
    run.step("no name", lambda: c.create({**run.cm("x"), "metadata": {"namespace": run.ns}}))
    run.step("bad finalizer", lambda: c.patch(CONFIG_MAP, "c", {"metadata": {"finalizers": ["clean up"]}}, run.ns))
    run.step("delete missing", lambda: c.delete(CONFIG_MAP, "nope", run.ns))
    run.step(
        "apply status missing", lambda: c.apply(run.widget("nope", status={}), field_manager="a", subresource="status")
    )
    run.step("widget without version", lambda: c.replace(WIDGET, run.widget("w")))


def writes_that_change_nothing(run: Run) -> None:
    c = run.client
    meta = {"name": "w", "namespace": run.ns, "labels": {"a": "b"}}
    run.step("apply", lambda: c.apply(run.widget("w", {"size": 1}, metadata=meta), field_manager="a"))
    run.step("apply again", lambda: c.apply(run.widget("w", {"size": 1}, metadata=meta), field_manager="a"))
    run.step("same labels", lambda: c.patch(WIDGET, "w", {"metadata": {"labels": {"a": "b"}}}, run.ns))
    run.step("set generation", lambda: c.patch(WIDGET, "w", {"metadata": {"generation": 9}}, run.ns))
    live = run.step("get", lambda: c.get(WIDGET, "w", run.ns))
    run.step("replace as is", lambda: c.replace(WIDGET, live))
    ops = [{"op": "add", "path": "/metadata/annotations/x", "value": "1"}]
    run.step("json add to a missing map", lambda: c.patch(WIDGET, "w", ops, run.ns, patch_type="json"))
    version = {"resourceVersion": live["metadata"]["resourceVersion"]}
    run.step("version named", lambda: c.patch(WIDGET, "w", {"metadata": version, "spec": {"size": 2}}, run.ns))
    identity = {
        "name": "i",
        "namespace": run.ns,
        "generation": 4,
        "uid": "x",
        "creationTimestamp": "2000-01-01T00:00:00Z",
    }
    run.step("create with identity", lambda: c.create(run.widget("i", {"size": 1}, metadata=identity)))


def _workload(run: Run, kind: str, name: str, app: str, **spec: Any) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": run.ns},
        "spec": {"selector": {"matchLabels": {"app": app}}, "template": template, **spec},
    }


def _selector_changed(run: Run, kind: kinds.Kind) -> None:
    c = run.client
    moved = {"spec": {"selector": {"matchLabels": {"app": "b"}}, "template": {"metadata": {"labels": {"app": "b"}}}}}
    run.step(f"{kind.kind} create", lambda: c.create(_workload(run, kind.kind, "w", "a"))["spec"]["selector"])
    run.step(f"{kind.kind} selector", lambda: c.patch(kind, "w", moved, run.ns))
    run.step(f"{kind.kind} selector applied", lambda: c.apply(_workload(run, kind.kind, "w", "b"), field_manager="a"))
    labels = {"metadata": {"labels": {"x": "1"}}}
    run.step(f"{kind.kind} labels", lambda: c.patch(kind, "w", labels, run.ns)["metadata"]["labels"])
    # A selector that no longer selects the template is refused with its change, in one 422.
    unselected = {"spec": {"selector": {"matchLabels": {"app": "c"}}}}
    _attempt(run, f"{kind.kind} selector not selecting", c.patch, kind, "w", unselected, run.ns)


def immutable_fields(run: Run) -> None:
    """A change of a field the API server never changes in place is a 422 naming it; the rest of the object still
    changes. (The answers of the writes that pass are reduced to what they changed: the API server defaults the rest
    of a workload, the fake does not.)"""
    c = run.client
    for kind in (DEPLOYMENT, REPLICA_SET, DAEMON_SET):
        _selector_changed(run, kind)
    sts = _workload(run, "StatefulSet", "s", "a", serviceName="s", replicas=1)
    run.step("sts create", lambda: c.create(sts)["spec"]["serviceName"])
    run.step("sts service", lambda: c.patch(STATEFUL_SET, "s", {"spec": {"serviceName": "t"}}, run.ns))
    claims = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
    run.step("sts claims", lambda: c.patch(STATEFUL_SET, "s", {"spec": {"volumeClaimTemplates": claims}}, run.ns))
    run.step("sts replicas", lambda: c.patch(STATEFUL_SET, "s", {"spec": {"replicas": 2}}, run.ns)["spec"]["replicas"])
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}}
    run.step("sts template", lambda: c.patch(STATEFUL_SET, "s", image, run.ns)["metadata"]["generation"])
    # The defaults the server filled in, spelt out: no change of an immutable field (the answers are reduced to the
    # fields at stake: the StatefulSet's controller writes its status meanwhile, on the server alone).
    spelt = {"podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10}
    run.step(
        "sts defaults spelt",
        lambda: _fields(c.patch(STATEFUL_SET, "s", {"spec": spelt}, run.ns), *spelt, metadata=False),
    )
    run.step("sts policy", lambda: c.patch(STATEFUL_SET, "s", {"spec": {"podManagementPolicy": "Parallel"}}, run.ns))
    run.step("sts history", lambda: c.patch(STATEFUL_SET, "s", {"spec": {"revisionHistoryLimit": 3}}, run.ns))
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    with_claims = _workload(run, "StatefulSet", "v", "v", serviceName="v", volumeClaimTemplates=[claim])
    run.step("sts with claims", lambda: c.create(with_claims)["spec"]["serviceName"])
    as_stored = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    as_stored_patch = {"spec": {"volumeClaimTemplates": [as_stored], **spelt}}
    run.step(
        "sts claims as stored",
        lambda: _fields(c.patch(STATEFUL_SET, "v", as_stored_patch, run.ns), "podManagementPolicy", metadata=False),
    )
    block = {"spec": {"volumeClaimTemplates": [{**as_stored, "spec": {**as_stored["spec"], "volumeMode": "Block"}}]}}
    run.step("sts claims block", lambda: c.patch(STATEFUL_SET, "v", block, run.ns))
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": run.ns},
        "spec": {
            "completions": 1,
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    run.step("job create", lambda: c.create(job)["spec"]["completions"])
    run.step("job template", lambda: c.patch(JOB, "j", image, run.ns))
    run.step("job completions", lambda: c.patch(JOB, "j", {"spec": {"completions": 2}}, run.ns))
    run.step("job parallelism", lambda: c.patch(JOB, "j", {"spec": {"parallelism": 3}}, run.ns)["spec"]["parallelism"])
    # A Job given neither completions nor parallelism runs one Pod: its completions, 1, spelt out later are no change.
    plain = {**job, "metadata": {"name": "k", "namespace": run.ns}, "spec": {"template": job["spec"]["template"]}}
    run.step("job k create", lambda: c.create(plain)["spec"]["template"]["spec"]["restartPolicy"])
    run.step(
        "job k parallelism", lambda: c.patch(JOB, "k", {"spec": {"parallelism": 2}}, run.ns)["spec"]["parallelism"]
    )
    run.step("job k one", lambda: c.patch(JOB, "k", {"spec": {"completions": 1}}, run.ns)["spec"]["completions"])
    run.step("job k two", lambda: c.patch(JOB, "k", {"spec": {"completions": 2}}, run.ns))
    run.step("cm create", lambda: c.create(run.cm("c", data={"a": "1"}, immutable=True)))
    run.step("cm data", lambda: c.patch(CONFIG_MAP, "c", {"data": {"a": "2"}}, run.ns))
    run.step("cm binary", lambda: c.patch(CONFIG_MAP, "c", {"binaryData": {"b": "eA=="}}, run.ns))
    run.step("cm mutable", lambda: c.patch(CONFIG_MAP, "c", {"immutable": False}, run.ns))
    run.step("cm labels", lambda: c.patch(CONFIG_MAP, "c", {"metadata": {"labels": {"x": "1"}}}, run.ns))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": run.ns}, "immutable": True}
    run.step("secret create", lambda: c.create({**secret, "data": {"a": "eA=="}})["data"])
    run.step("secret data", lambda: c.patch(SECRET, "s", {"data": {"a": "eQ=="}}, run.ns))
    run.step("secret string data", lambda: c.patch(SECRET, "s", {"stringData": {"b": "y"}}, run.ns))
    run.step("cm made immutable", lambda: c.create(run.cm("m", data={"a": "1"})))
    run.step(
        "cm made immutable with data", lambda: c.patch(CONFIG_MAP, "m", {"data": {"a": "2"}, "immutable": True}, run.ns)
    )


def _fields(obj: dict[str, Any], *names: str, metadata: bool = True) -> dict[str, Any]:
    """The fields of ``obj``'s spec named, and its metadata (unless ``metadata`` is False: where the fake's
    resourceVersion and generation differ, as documented, from the server's)."""
    spec = {name: obj["spec"].get(name) for name in names}
    return {"metadata": obj["metadata"], "spec": spec} if metadata else {"spec": spec}


def _service(answer: dict[str, Any]) -> dict[str, Any]:
    """A Service as answered, its cluster IPs said by their shape (the server allocates one at random), without the
    spec's defaults (the fake fills in none)."""
    spec = answer["spec"]
    ips, ip = spec.get("clusterIPs"), spec.get("clusterIP")
    shape = ips if ips in (None, ["None"]) else ("allocated" if ips == [ip] and ip.startswith("10.") else ips)
    ports = [{k: v for k, v in port.items() if k != "targetPort"} for port in spec.get("ports") or ()]
    return {
        "metadata": answer["metadata"],
        "type": spec.get("type") or "ClusterIP",
        "clusterIPs": shape,
        "ports": ports,
    }


def service_cluster_ip(run: Run) -> None:
    """A Service's cluster IP is allocated on create and never changes after: each way of changing it, or of leaving
    it out of an update, is a 422 naming ``spec.clusterIPs`` as Kubernetes 1.20 does."""
    c = run.client
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": run.ns}}
    port = {"port": 80, "protocol": "TCP"}
    created = run.step("create", lambda: _service(c.create({**body, "spec": {"ports": [port]}})))
    ip = c.get(SERVICE, "s", run.ns)["spec"]["clusterIP"]
    other = "10.96.0.77" if ip != "10.96.0.77" else "10.96.0.78"
    assert created is not None
    for label, spec in [
        ("another clusterIP", {"clusterIP": other}),
        ("another clusterIPs", {"clusterIPs": [other]}),
        ("both", {"clusterIP": other, "clusterIPs": [other]}),
        ("clusterIP removed", {"clusterIP": None}),
        ("clusterIP empty", {"clusterIP": ""}),
        ("both removed", {"clusterIP": None, "clusterIPs": None}),
        ("clusterIPs removed", {"clusterIPs": None}),
        ("the same clusterIP", {"clusterIP": ip}),
    ]:
        run.step(label, lambda spec=spec: _service(c.patch(SERVICE, "s", {"spec": spec}, run.ns)))
    live = c.get(SERVICE, "s", run.ns)
    without = {k: v for k, v in live["spec"].items() if k not in ("clusterIP", "clusterIPs")}
    run.step("update without it", lambda: _service(c.replace(SERVICE, {**live, "spec": without})))
    kept = {**live["spec"], "ports": [{"port": 81, "protocol": "TCP"}]}
    run.step("update keeping it", lambda: _service(c.replace(SERVICE, {**live, "spec": kept})))
    applied = {**body, "spec": {"ports": [{"port": 81, "protocol": "TCP"}]}}
    run.step("apply without it", lambda: _service(c.apply(applied, field_manager="a")))
    moved = {**body, "spec": {"clusterIP": other, "ports": [{"port": 81, "protocol": "TCP"}]}}
    run.step("apply another", lambda: _service(c.apply(moved, field_manager="a", force=True)))
    taken = {**body, "metadata": {"name": "t", "namespace": run.ns}, "spec": {"clusterIP": ip, "ports": [port]}}
    run.step("create with its clusterIP", lambda: _service(c.create(taken)))
    headless = {**body, "metadata": {"name": "h", "namespace": run.ns}, "spec": {"clusterIP": "None", "ports": [port]}}
    run.step("create headless", lambda: _service(c.create(headless)))
    run.step("headless given one", lambda: _service(c.patch(SERVICE, "h", {"spec": {"clusterIP": other}}, run.ns)))
    external = {"type": "ExternalName", "externalName": "db.example.com"}
    run.step("made ExternalName", lambda: _service(c.patch(SERVICE, "s", {"spec": external}, run.ns)))
    back = {"type": "ClusterIP", "externalName": None}
    run.step("made ClusterIP again", lambda: _service(c.patch(SERVICE, "s", {"spec": back}, run.ns)))


def claim_spec(run: Run) -> None:
    """A PersistentVolumeClaim's spec is immutable once created, but for the volume that binds an unbound claim (a
    bound claim may request more storage: not here, no volume binds on this control plane)."""
    c = run.client
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p", "namespace": run.ns}}
    shown = ("accessModes", "resources", "storageClassName", "volumeName")

    def claim(answer: dict[str, Any]) -> dict[str, Any]:
        # (Without the kubernetes.io/pvc-protection finalizer the server's admission adds: the fake admits all.)
        meta = {k: v for k, v in answer["metadata"].items() if k != "finalizers"}
        return _fields({**answer, "metadata": meta}, *shown)

    run.step("create", lambda: claim(c.create({**body, "spec": spec})))
    for label, change in [
        ("more storage", {"resources": {"requests": {"storage": "2Gi"}}}),
        ("a limit", {"resources": {"limits": {"storage": "3Gi"}}}),
        ("another class", {"storageClassName": "b"}),
        ("other access modes", {"accessModes": ["ReadWriteMany"]}),
        ("block", {"volumeMode": "Block"}),
        ("class and modes", {"storageClassName": "b", "accessModes": ["ReadWriteMany"]}),
        ("its volume", {"volumeName": "pv1"}),
        ("another volume", {"volumeName": "pv2"}),
    ]:
        run.step(label, lambda change=change: claim(c.patch(CLAIM, "p", {"spec": change}, run.ns)))
    run.step("labels", lambda: claim(c.patch(CLAIM, "p", {"metadata": {"labels": {"a": "b"}}}, run.ns)))
    run.step(
        "apply another class", lambda: c.apply({**body, "spec": {**spec, "storageClassName": "c"}}, field_manager="a")
    )


def _at_stake(answer: dict[str, Any], spec: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """An answer reduced to its metadata (whether the write changed the object: its resourceVersion, its generation)
    and the fields the write is about."""
    return {"metadata": answer["metadata"], "at stake": spec(answer["spec"])}


def _pod_defaults(pod: dict[str, Any]) -> dict[str, Any]:
    shown = ("image", "imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy", "resources")
    return {
        "pod": {
            k: pod.get(k) for k in ("restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds")
        },
        "containers": [{k: c.get(k) for k in shown} for c in pod["containers"]],
    }


def spelt_out_defaults(run: Run) -> None:
    """A write that spells out a value the server gives the field anyway is no change: the same resourceVersion, no
    new generation; leaving it out again is none either. (A Deployment's controller writes its status and an
    annotation meanwhile, on the server alone: its answers are reduced to its generation and spec.)"""
    c = run.client
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": run.ns}}

    def pod_template(container: dict[str, Any], **pod: Any) -> dict[str, Any]:
        return {**template, "template": {"spec": {"containers": [{"name": "c", **container}], **pod}}}

    def shown(answer: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": answer["metadata"], "at stake": _pod_defaults(answer["template"]["spec"])}

    def apply(label: str, body: dict[str, Any]) -> None:
        run.step(label, lambda: shown(c.apply(body, field_manager="a")))

    apply("pod template", pod_template({"image": "busybox:1.32"}))
    spelt = {
        "image": "busybox:1.32",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    apply("again", pod_template({"image": "busybox:1.32"}))
    apply("container defaults", pod_template(spelt))
    apply("container defaults again", pod_template(spelt))
    pod = {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler"}
    apply("pod defaults", pod_template(spelt, terminationGracePeriodSeconds=30, **pod))
    apply("left out again", pod_template({"image": "busybox:1.32"}))
    apply("left out once more", pod_template({"image": "busybox:1.32"}))
    apply("latest", pod_template({"image": "busybox"}))
    apply("latest spelt", pod_template({"image": "busybox", "imagePullPolicy": "Always"}))
    apply("digest", pod_template({"image": "registry:5000/busybox@sha256:" + "0" * 64}))
    apply("another policy", pod_template({"image": "busybox", "imagePullPolicy": "Never"}))

    def deployment(**spec: Any) -> dict[str, Any]:
        return _workload(run, "Deployment", "d", "a", **spec)

    def desired(answer: dict[str, Any]) -> dict[str, Any]:
        spec = answer["spec"]
        return {"generation": answer["metadata"]["generation"], "strategy": spec.get("strategy")} | {
            k: spec.get(k) for k in ("replicas", "revisionHistoryLimit", "progressDeadlineSeconds")
        }

    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    for label, spec in [
        ("deployment", {}),
        ("strategy type", {"strategy": {"type": "RollingUpdate"}}),
        ("rolling update", {"strategy": rolling, "replicas": 1, "revisionHistoryLimit": 10}),
        ("left out", {}),
        ("left out again", {}),
    ]:
        run.step(f"{label}", lambda spec=spec: desired(c.apply(deployment(**spec), field_manager="a")))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": run.ns}}

    def service_fields(answer: dict[str, Any]) -> dict[str, Any]:
        spec = answer["spec"]
        return {"metadata": answer["metadata"]} | {k: spec.get(k) for k in ("type", "sessionAffinity", "ports")}

    port = {"port": 80, "protocol": "TCP"}
    for label, spec in [
        ("service", {}),
        ("session affinity", {"sessionAffinity": "None"}),
        ("session affinity again", {"sessionAffinity": "None"}),
        ("type", {"type": "ClusterIP", "sessionAffinity": "None"}),
        ("target port", {"ports": [{**port, "targetPort": 80}]}),
        ("target port again", {"ports": [{**port, "targetPort": 80}]}),
        ("another affinity", {"sessionAffinity": "ClientIP"}),
    ]:
        body = {**service, "spec": {"ports": [port], **spec}}
        run.step(label, lambda body=body: service_fields(c.apply(body, field_manager="a")))
    patch = {"spec": {"sessionAffinity": "None"}}
    run.step("patched back", lambda: service_fields(c.patch(SERVICE, "s", patch, run.ns)))
    run.step("patched as it is", lambda: service_fields(c.patch(SERVICE, "s", patch, run.ns)))


def defaults_filled(run: Run) -> None:
    """The spec of each kind the fake defaults, as created from a minimal body: the server's defaults, all of them
    (a Service's cluster IP said by its shape)."""
    c = run.client
    claims = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
    for kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        extra = {"serviceName": "s", "volumeClaimTemplates": claims} if kind == "StatefulSet" else {}
        run.step(kind, lambda kind=kind, extra=extra: c.create(_workload(run, kind, "w", "a", **extra))["spec"])
    job = _workload(run, "Job", "j", "a")
    job["apiVersion"] = "batch/v1"
    del job["spec"]["selector"], job["spec"]["template"]["metadata"]
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"

    def job_spec(answer: dict[str, Any]) -> dict[str, Any]:
        # (Without the selector and the labels the server's Job strategy makes up: the fake makes up none.)
        spec = {k: v for k, v in answer["spec"].items() if k != "selector"}
        return {**spec, "template": {**spec["template"], "metadata": {}}}

    run.step("Job", lambda: job_spec(c.create(job)))
    parallel = {**job, "metadata": {"name": "k", "namespace": run.ns}, "spec": {**job["spec"], "parallelism": 2}}
    run.step("Job with its parallelism", lambda: job_spec(c.create(parallel)))
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": run.ns}}
    containers = [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]
    run.step(
        "PodTemplate", lambda: c.create({**template, "template": {"spec": {"containers": containers}}})["template"]
    )
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": run.ns}}

    def spec_of(answer: dict[str, Any]) -> dict[str, Any]:
        spec = answer["spec"]
        return {**spec, "clusterIP": "<ip>", "clusterIPs": ["<ip>"]}

    run.step("Service", lambda: spec_of(c.create({**service, "spec": {"ports": [{"port": 80}]}})))
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p", "namespace": run.ns}}
    requests = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    run.step("PersistentVolumeClaim", lambda: c.create({**claim, "spec": requests})["spec"])


def quantities(run: Run) -> None:
    """Quantities are stored in their canonical form, and compared so: another spelling of the same quantity is no
    change."""
    c = run.client
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p", "namespace": run.ns}}

    def storage(spec: dict[str, Any]) -> Any:
        return spec["resources"]

    def claim_spec(size: str) -> dict[str, Any]:
        return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}

    def without_finalizers(answer: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in answer["metadata"].items() if k != "finalizers"}
        return _at_stake({**answer, "metadata": meta}, storage)

    run.step("claim", lambda: without_finalizers(c.apply({**claim, "spec": claim_spec("1024Mi")}, field_manager="a")))
    # (On Kubernetes 1.20 the first write after a claim's create is a new resourceVersion whatever it writes, which
    # the fake does not copy: a write that changes the claim comes first.)
    labelled = {"metadata": {"labels": {"a": "b"}}}
    run.step("labelled", lambda: without_finalizers(c.patch(CLAIM, "p", labelled, run.ns)))
    run.step("claim 1Gi", lambda: without_finalizers(c.apply({**claim, "spec": claim_spec("1Gi")}, field_manager="a")))
    patch = {"spec": {"resources": {"requests": {"storage": "1073741824"}}}}
    run.step("claim in bytes", lambda: without_finalizers(c.patch(CLAIM, "p", patch, run.ns)))
    run.step("claim 2Gi", lambda: without_finalizers(c.apply({**claim, "spec": claim_spec("2Gi")}, field_manager="a")))

    # (A PodTemplate's containers, where no controller writes meanwhile, as a Deployment's does on the server.)
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": run.ns}}

    def pod_template(resources: dict[str, Any]) -> dict[str, Any]:
        return {
            **template,
            "template": {"spec": {"containers": [{"name": "c", "image": "x:1", "resources": resources}]}},
        }

    def container(answer: dict[str, Any]) -> Any:
        return {"metadata": answer["metadata"], "at stake": answer["template"]["spec"]["containers"][0]["resources"]}

    for label, resources in [
        ("resources", {"requests": {"cpu": "1000m", "memory": "0.5Gi"}, "limits": {"cpu": "1.5", "memory": "1e9"}}),
        (
            "resources again",
            {"requests": {"cpu": "1000m", "memory": "0.5Gi"}, "limits": {"cpu": "1.5", "memory": "1e9"}},
        ),
        (
            "same, spelt otherwise",
            {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "1500m", "memory": "1000e6"}},
        ),
        ("another family", {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"cpu": "1500m", "memory": "1G"}}),
    ]:
        body = pod_template(resources)
        run.step(label, lambda body=body: container(c.apply(body, field_manager="a")))
    # A patch takes a number where a quantity goes (an apply does not, on Kubernetes 1.20: a 500).
    number = [{"op": "replace", "path": "/template/spec/containers/0/resources/requests/cpu", "value": 0.5}]
    run.step("a number", lambda: container(c.patch(POD_TEMPLATE, "t", number, run.ns, patch_type="json")))
    run.step("cm data", lambda: c.create(run.cm("c", data={"size": "1024Mi"}))["data"])


def _refusal(run: Run, label: str, body: dict[str, Any], *, ordered: bool = True) -> None:
    """Create ``body``, named after ``label`` (one the fake stored would not make the next a 409), written down as the
    server refuses it: status, reason, message and each cause's reason, field and message, in order (unless ``ordered``
    is False: where the server's Go walks a map, in an order of its own each time, the causes alone, as a set)."""
    body["metadata"]["name"] = re.sub("[^a-z0-9]+", "-", label.lower()).strip("-")

    def call() -> Any:
        try:
            run.client.create(body)
        except errors.ApiError as exc:
            causes = [(cause.reason, cause.field, cause.message) for cause in exc.causes]
            if not ordered:
                return ("refused", exc.status, exc.api_reason, sorted(causes))
            return ("refused", exc.status, exc.api_reason, exc.api_message, causes)
        return "stored"

    run.step(label, call)


def _pod_workload(run: Run, kind: str, pod: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A workload of ``kind`` named ``w``: a template labelled ``app: a`` running ``pod`` (one container by default),
    selected by ``app: a`` (but a Job's, whose selector the server makes), and ``spec`` over that."""
    containers = [{"name": "c", "image": "busybox"}]
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": containers, **(pod or {})}}
    body: dict[str, Any] = {"template": template}
    if kind == "Job":
        template["spec"].setdefault("restartPolicy", "Never")
    else:
        body["selector"] = {"matchLabels": {"app": "a"}}
    if kind == "StatefulSet":
        body["serviceName"] = "w"
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    meta = {"name": "w", "namespace": run.ns}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": {**body, **spec}}


def pod_spec_refusals(run: Run) -> None:
    """A workload's spec the server refuses, refused by the fake with the same status, reason, message and causes, in
    the same order: an empty selector, a Job's restartPolicy, an environment variable without a name, a Pod template's
    own labels and annotations, and several faults of one write (the object's labels with its spec's, container by
    container)."""
    for kind, selector in [
        ("Deployment", {}),
        ("ReplicaSet", {"matchLabels": {}}),
        ("DaemonSet", {}),
        ("StatefulSet", {"matchLabels": {}, "matchExpressions": []}),
    ]:
        _refusal(run, f"{kind} empty selector", _pod_workload(run, kind, selector=selector))
    _refusal(run, "Job restartPolicy Always", _pod_workload(run, "Job", {"restartPolicy": "Always"}))
    _refusal(run, "Job restartPolicy left out", _pod_workload(run, "Job", {"restartPolicy": None}))
    _refusal(run, "Job restartPolicy unknown", _pod_workload(run, "Job", {"restartPolicy": "Sometimes"}))
    _refusal(run, "Deployment restartPolicy unknown", _pod_workload(run, "Deployment", {"restartPolicy": "Sometimes"}))
    unnamed = [{"name": "c", "image": "busybox", "env": [{"name": "", "value": "1"}, {"value": "2"}]}]
    _refusal(run, "env var without a name", _pod_workload(run, "Deployment", {"containers": unnamed}))
    _refusal(run, "Job env var without a name", _pod_workload(run, "Job", {"containers": unnamed}))
    labelled = _pod_workload(run, "Deployment")
    labelled["spec"]["template"]["metadata"]["labels"]["-x"] = "y"
    _refusal(run, "template label key", labelled)
    annotated = _pod_workload(run, "StatefulSet")
    annotated["spec"]["template"]["metadata"]["annotations"] = {"a/b/c": "1"}
    _refusal(run, "StatefulSet template annotation", annotated)
    job = _pod_workload(run, "Job")
    job["metadata"]["labels"] = {"own": "label"}  # else the server gives the Job its template's labels
    job["spec"]["template"]["metadata"]["labels"]["app"] = "not a value"
    _refusal(run, "Job template label value", job)
    both = _pod_workload(run, "Deployment", {"containers": [{"name": "c", "image": ""}]})
    both["metadata"]["labels"] = {"-x": "y"}
    _refusal(run, "object label and container image", both)
    held = run.cm("")
    held["metadata"]["finalizers"] = ["clean up"]
    held["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": ""}]
    _refusal(run, "finalizer and owner reference", held)
    over = {"requests": {"cpu": "2000m"}, "limits": {"cpu": "1500m"}}
    two_by_two = [
        {"name": "", "image": "busybox", "resources": over},
        {"name": "d", "image": "", "env": [{"name": "1x", "value": "1"}]},
    ]
    _refusal(run, "two containers, two faults each", _pod_workload(run, "Deployment", {"containers": two_by_two}))
    twins = [{"name": "", "image": "busybox"}, {"name": "", "image": "busybox"}, {"name": "Big", "image": "busybox"}]
    _refusal(
        run, "containers unnamed twice, one not a DNS label", _pod_workload(run, "Deployment", {"containers": twins})
    )
    both_over = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    greedy = [{"name": "c", "image": "busybox", "resources": both_over}]
    _refusal(
        run, "two resources over their limits", _pod_workload(run, "Deployment", {"containers": greedy}), ordered=False
    )


def undecodable_values(run: Run) -> None:
    """A value of the right JSON type the server cannot decode into its kind's Go object — a Secret's ``data`` that is
    not base64, a quantity that is none, in a Pod, a workload's template, a ResourceQuota, a LimitRange — refused by
    the fake as the server refuses it: an apply with its 500, a create or an update with its 400."""
    c = run.client

    def attempt(label: str, write: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        _attempt(run, label, write, *args, **kwargs)

    def secret(name: str, value: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": run.ns}
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"k": value}}

    for value in ["not base64!", "abc", "YWJj=", "YQ==YQ==", "YWJ\nj"]:
        attempt(f"apply data {value!r}", c.apply, secret("applied", value), field_manager="a")
        attempt(f"create data {value!r}", c.create, secret(f"created{len(value)}", value))
    c.create(secret("kept", "YQ=="))
    attempt("update data", c.replace, SECRET, secret("kept", "lots!"))
    attempt("apply data over stored", c.apply, secret("kept", "lots!"), field_manager="a")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": run.ns}}
    for cpu in ["lots", "1x", "", "1.5.5", "1e", " 1 "]:
        containers = [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": cpu}}}]
        attempt(f"apply Pod cpu {cpu!r}", c.apply, {**pod, "spec": {"containers": containers}}, field_manager="a")
        attempt(f"create Pod cpu {cpu!r}", c.create, {**pod, "spec": {"containers": containers}})
    memory = [{"name": "c", "image": "busybox", "resources": {"requests": {"memory": "lots"}}}]
    for kind in ("Deployment", "StatefulSet", "Job"):
        attempt(f"apply {kind}", c.apply, _pod_workload(run, kind, {"containers": memory}), field_manager="a")
        # (The server names each field it decodes after the faulty value too: here the value closes each object.)
        created = _pod_workload(run, kind, {"restartPolicy": "OnFailure"} if kind == "Job" else {})
        spec = created["spec"]
        created["spec"] = {**{k: v for k, v in spec.items() if k != "template"}, "template": spec["template"]}
        created["spec"]["template"]["spec"]["initContainers"] = memory
        attempt(f"create {kind}", c.create, created)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": run.ns}}
    attempt("apply ResourceQuota", c.apply, {**quota, "spec": {"hard": {"cpu": "lots"}}}, field_manager="a")
    attempt("create ResourceQuota", c.create, {**quota, "spec": {"hard": {"pods": "1", "cpu": "1e"}}})
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l", "namespace": run.ns}}
    item = {"type": "Container", "max": {"cpu": "lots"}}
    attempt("apply LimitRange", c.apply, {**limits, "spec": {"limits": [item]}}, field_manager="a")
    attempt("create LimitRange", c.create, {**limits, "spec": {"limits": [{"type": "Container"}, item]}})


def _attempt(run: Run, label: str, write: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Send ``write(*args, **kwargs)``, written down as ``stored`` or as refused: status, reason, message and each
    cause's reason, field and message, in order."""

    def call() -> Any:
        try:
            write(*args, **kwargs)
        except errors.ApiError as exc:
            causes = [(cause.reason, cause.field, cause.message) for cause in exc.causes]
            return ("refused", exc.status, exc.api_reason, exc.api_message, causes)
        return "stored"

    run.step(label, call)


def undecodable_quantities(run: Run) -> None:
    """A quantity that is none in a CronJob's job template, a PersistentVolumeClaim's requests or a
    HorizontalPodAutoscaler's target, refused by every verb as the server refuses it: a create or an update with its
    400 (its message naming the path), a patch with its 422 (whose message quotes the patched object: its status,
    reason and causes compared), an apply with its 500."""
    c = run.client
    containers = [{"name": "c", "image": "busybox", "resources": {"limits": {"cpu": "lots"}}}]
    pod = {"spec": {"restartPolicy": "Never", "containers": containers}}
    cron = {
        "apiVersion": "batch/v1beta1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": run.ns},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": pod}}},
    }
    _attempt(run, "create CronJob", c.create, cron)
    _attempt(run, "apply CronJob", c.apply, cron, field_manager="a")
    fine = copy.deepcopy(cron)
    fine["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
    live = c.create(fine)
    _attempt(run, "update CronJob", c.replace, CRON_JOB, {**cron, "metadata": live["metadata"]})
    run.step("patch CronJob", lambda: c.patch(CRON_JOB, "cj", {"spec": cron["spec"]}, run.ns))
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "pvc", "namespace": run.ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "lots"}}},
    }
    _attempt(run, "create claim", c.create, claim)
    _attempt(run, "apply claim", c.apply, claim, field_manager="a")
    c.create({**claim, "spec": {**claim["spec"], "resources": {"requests": {"storage": "1Gi"}}}})
    patch = {"spec": {"resources": {"requests": {"storage": "1e"}}}}
    run.step("patch claim", lambda: c.patch(CLAIM, "pvc", patch, run.ns))
    target = {"type": "AverageValue", "averageValue": "lots"}
    scaler = {
        "apiVersion": "autoscaling/v2beta2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": run.ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "maxReplicas": 2,
            "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": target}}],
        },
    }
    _attempt(run, "create autoscaler", c.create, scaler)
    _attempt(run, "apply autoscaler", c.apply, scaler, field_manager="a")
    pods = {"type": "Pods", "pods": {"metric": {"name": "m"}, "target": {"type": "Value", "value": "1x"}}}
    _attempt(run, "create autoscaler pods", c.create, {**scaler, "spec": {**scaler["spec"], "metrics": [pods]}})
    # autoscaling/v2beta1 names its targets otherwise: a source's targetValue, targetAverageValue (averageValue).
    older = {**scaler, "apiVersion": "autoscaling/v2beta1", "metadata": {"name": "o", "namespace": run.ns}}
    reference = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    for label, metric in [
        ("resource", {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "lots"}}),
        ("pods", {"type": "Pods", "pods": {"metricName": "m", "targetAverageValue": "1x"}}),
        ("object", {"type": "Object", "object": {"target": reference, "metricName": "m", "targetValue": "1e"}}),
        (
            "object average",
            {
                "type": "Object",
                "object": {"target": reference, "metricName": "m", "targetValue": "1", "averageValue": "lots"},
            },
        ),
        ("external", {"type": "External", "external": {"metricName": "m", "targetAverageValue": ""}}),
    ]:
        body = {**older, "spec": {**older["spec"], "metrics": [metric]}}
        _attempt(run, f"create v2beta1 autoscaler {label}", c.create, body)
        _attempt(run, f"apply v2beta1 autoscaler {label}", c.apply, body, field_manager="a")
    fine = {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "1Gi"}}
    live = c.create({**older, "spec": {**older["spec"], "metrics": [fine]}})
    faulty = {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "lots"}}
    updated = {**older, "metadata": live["metadata"], "spec": {**older["spec"], "metrics": [faulty]}}
    _attempt(run, "update v2beta1 autoscaler", c.replace, c.kind_of(live), updated)
    run.step("patch v2beta1 autoscaler", lambda: c.patch(c.kind_of(live), "o", {"spec": {"metrics": [faulty]}}, run.ns))


def undecodable_times(run: Run) -> None:
    """A time that is none (a ``metav1.Time``: an object's ``creationTimestamp``, a Job's ``startTime``) refused by
    every verb as the server refuses it, in Go's words: a create or an update with its 400, a patch with its 422, an
    apply with its 500; a time Go reads (a fraction of a second, an offset, ``null``) stored."""
    c = run.client
    for value in [
        "yesterday",
        "",
        "2020-01-01T00:00:00",
        "2020-01-01 00:00:00Z",
        "2020-13-01T00:00:00Z",
        "2021-02-29T00:00:00Z",
        "2020-01-01T24:00:00Z",
        "2020-01-01T00:00:00Zs",
        "2020-01-01T00:00:00+0100",
        "2020-1-01T00:00:00Z",
        "2020-01-01T1:00:00Z",
        "2020-01-01T00:00:00.1234567891Z",
        "2020-02-29T00:00:00.5+01:00",
        None,
    ]:
        name = f"t{len(run.transcript)}"
        _attempt(run, f"create {value!r}", c.create, run.cm(name) | _timed(run, name, value))
    _attempt(run, "apply", c.apply, run.cm("a") | _timed(run, "a", "yesterday"), field_manager="a")
    live = c.create(run.cm("c"))
    meta = {**live["metadata"], "creationTimestamp": "yesterday"}
    _attempt(run, "update", c.replace, CONFIG_MAP, {**live, "metadata": meta})
    run.step("merge patch", lambda: c.patch(CONFIG_MAP, "c", {"metadata": {"creationTimestamp": "soon"}}, run.ns))
    stamp = [{"op": "replace", "path": "/metadata/creationTimestamp", "value": "soon"}]
    run.step("json patch", lambda: c.patch(CONFIG_MAP, "c", stamp, run.ns, patch_type="json"))
    job = _pod_workload(run, "Job", {"restartPolicy": "Never"})
    _attempt(run, "create Job startTime", c.create, {**job, "status": {"startTime": "yesterday"}})
    _attempt(run, "apply Job startTime", c.apply, {**job, "status": {"startTime": "yesterday"}}, field_manager="a")
    c.create(job)
    status = {"status": {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "soon"}]}}
    run.step("patch Job status", lambda: c.patch(JOB, "w", status, run.ns, subresource="status"))
    run.step("get", lambda: c.get(CONFIG_MAP, "c", run.ns))
    widget = run.widget("w", {"size": 1})
    widget["metadata"]["creationTimestamp"] = "yesterday"
    _attempt(run, "create custom resource", c.create, widget)
    _attempt(run, "apply custom resource", c.apply, widget, field_manager="a")
    widget["metadata"].update(name="v", creationTimestamp=None, labels={"a": "b"})
    live = c.create(widget)
    meta = {**live["metadata"], "creationTimestamp": "2020-01-01T00:00:00+01"}
    _attempt(run, "update custom resource", c.replace, WIDGET, {**live, "metadata": meta})
    run.step("patch custom resource", lambda: c.patch(WIDGET, "v", {"metadata": {"creationTimestamp": "soon"}}, run.ns))
    run.step("get custom resource", lambda: c.get(WIDGET, "w", run.ns))
    # A time written as a JSON number (or another JSON type than a string) is none either.
    for value in [5, 1.5, 0, True, {"seconds": 5}]:
        name = f"n{len(run.transcript)}"
        _attempt(run, f"create {value!r}", c.create, run.cm(name) | _timed(run, name, value))
    _attempt(run, "apply a number", c.apply, run.cm("a") | _timed(run, "a", 5), field_manager="a")
    live = c.get(CONFIG_MAP, "c", run.ns)
    _attempt(
        run,
        "update a number",
        c.replace,
        CONFIG_MAP,
        {**live, "metadata": {**live["metadata"], "creationTimestamp": 5}},
    )
    run.step("merge patch a number", lambda: c.patch(CONFIG_MAP, "c", {"metadata": {"creationTimestamp": 5}}, run.ns))
    job = _pod_workload(run, "Job", {"restartPolicy": "Never"})
    job["metadata"]["name"] = "j"
    _attempt(run, "create Job startTime 1.5", c.create, {**job, "status": {"startTime": 1.5}})
    _attempt(run, "apply Job startTime 1.5", c.apply, {**job, "status": {"startTime": 1.5}}, field_manager="a")
    status = {"status": {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": 0}]}}
    run.step("patch Job status a number", lambda: c.patch(JOB, "w", status, run.ns, subresource="status"))
    widget = run.widget("n", {"size": 1})
    widget["metadata"]["creationTimestamp"] = 5
    _attempt(run, "create custom resource a number", c.create, widget)
    _attempt(run, "apply custom resource a number", c.apply, widget, field_manager="a")
    run.step("get custom resource a number", lambda: c.get(WIDGET, "n", run.ns))


def _timed(run: Run, name: str, value: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": run.ns, "creationTimestamp": value}}


def job_labels(run: Run) -> None:
    """A Job is given a selector of its own Pods (``controller-uid``, its uid) and those labels on its template
    (``job-name`` too), unless its selector is manual; a Job without labels is given its template's."""
    c = run.client

    def shown(answer: dict[str, Any]) -> Any:
        uid = answer["metadata"]["uid"]
        return json.loads(
            json.dumps(
                {
                    "labels": answer["metadata"].get("labels"),
                    "selector": answer["spec"].get("selector"),
                    "manualSelector": answer["spec"].get("manualSelector"),
                    "template": answer["spec"]["template"]["metadata"],
                }
            ).replace(uid, "<its uid>")
        )

    def job(name: str, **spec: Any) -> dict[str, Any]:
        body = _pod_workload(run, "Job", **spec)
        body["metadata"]["name"] = name
        return body

    run.step("created", lambda: shown(c.create(job("a"))))
    labelled = job("b")
    labelled["metadata"]["labels"] = {"own": "label"}
    run.step("labelled", lambda: shown(c.create(labelled)))
    bare = job("c")
    del bare["spec"]["template"]["metadata"]
    run.step("template without labels", lambda: shown(c.create(bare)))
    named = job("d")
    named["spec"]["template"]["metadata"]["labels"].update({"job-name": "other", "controller-uid": "x"})
    # (The server's messages name the uid it gave the Job: the causes' fields are compared.)
    run.step("template naming another Job and its uid", c.create, named)
    run.step("selector given", c.create, job("s", selector={"matchLabels": {"app": "a"}}))
    manual_unselected = job("m", manualSelector=True, selector={"matchLabels": {"app": "b"}})
    _refusal(run, "manual selector not selecting", manual_unselected)
    # A manual selector is not one made up by the server: one left out is refused as such, not as selecting nothing.
    _refusal(run, "manual selector left out", job("n", manualSelector=True))
    _refusal(run, "manual selector empty", job("p", manualSelector=True, selector={}))
    always = job("q", manualSelector=True)
    always["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    _refusal(run, "manual selector left out, restartPolicy Always", always)
    manual = job("e", manualSelector=True, selector={"matchLabels": {"app": "a"}})
    run.step("manual selector", lambda: shown(c.create(manual)))
    # A manual selector removed from a Job that has one: required again, and the selector may not change.
    removed = copy.deepcopy(c.get(JOB, "e", run.ns))
    del removed["spec"]["selector"]
    _attempt(run, "manual selector removed by an update", c.replace, JOB, removed)
    _attempt(run, "manual selector removed by a patch", c.patch, JOB, "e", {"spec": {"selector": None}}, run.ns)
    # A CronJob's jobs are given their selector: its job template may not ask for a manual one, nor give one.
    template = job("t")["spec"]
    cron = {
        "apiVersion": "batch/v1beta1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": run.ns},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {**template, "manualSelector": True}}},
    }
    _refusal(run, "CronJob manual selector left out", cron)
    selected = copy.deepcopy(cron)
    selected["spec"]["jobTemplate"]["spec"]["selector"] = {"matchLabels": {"app": "a"}}
    _refusal(run, "CronJob manual selector given", selected)
    del selected["spec"]["jobTemplate"]["spec"]["manualSelector"]
    _refusal(run, "CronJob selector given", selected)
    run.step("applied", lambda: shown(c.apply(job("f"), field_manager="a")))
    run.step("applied again", lambda: shown(c.apply(job("f"), field_manager="a")))
    live = c.get(JOB, "a", run.ns)
    run.step("updated as read", lambda: shown(c.replace(JOB, live)))


def node_ports(run: Run) -> None:
    """A NodePort or LoadBalancer Service's ports are given node ports by the server, kept by writes that leave them
    out; a LoadBalancer whose external traffic policy is Local is given a health check node port."""
    c = run.client
    ports: dict[int, str] = {}

    def port_of(value: Any) -> Any:
        if not isinstance(value, int):
            return value
        return ports.setdefault(value, f"port{len(ports) + 1}" if 30000 <= value <= 32767 else str(value))

    def shown(answer: dict[str, Any]) -> dict[str, Any]:
        spec = answer["spec"]
        return {
            "metadata": answer["metadata"],
            "type": spec.get("type"),
            "ports": [{**p, "nodePort": port_of(p.get("nodePort"))} for p in spec.get("ports") or ()],
            "healthCheckNodePort": port_of(spec.get("healthCheckNodePort")),
            "externalTrafficPolicy": spec.get("externalTrafficPolicy"),
        }

    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "n", "namespace": run.ns}}
    web = {"name": "web", "port": 80, "protocol": "TCP", "targetPort": 80}
    admin = {"name": "admin", "port": 81, "protocol": "TCP", "targetPort": 81}
    run.step(
        "node port", lambda: shown(c.apply({**body, "spec": {"type": "NodePort", "ports": [web]}}, field_manager="a"))
    )
    run.step("again", lambda: shown(c.apply({**body, "spec": {"type": "NodePort", "ports": [web]}}, field_manager="a")))
    run.step(
        "another port",
        lambda: shown(c.apply({**body, "spec": {"type": "NodePort", "ports": [web, admin]}}, field_manager="a")),
    )
    live = c.get(SERVICE, "n", run.ns)
    stripped = [{k: v for k, v in p.items() if k != "nodePort"} for p in live["spec"]["ports"]]
    run.step("update without", lambda: shown(c.replace(SERVICE, {**live, "spec": {**live["spec"], "ports": stripped}})))
    lb = {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "ports": [web]}
    run.step(
        "load balancer",
        lambda: shown(c.apply({**body, "metadata": {"name": "l", "namespace": run.ns}, "spec": lb}, field_manager="a")),
    )
    run.step(
        "load balancer again",
        lambda: shown(c.apply({**body, "metadata": {"name": "l", "namespace": run.ns}, "spec": lb}, field_manager="a")),
    )
    run.step(
        "cluster",
        lambda: shown(c.create({**body, "metadata": {"name": "c", "namespace": run.ns}, "spec": {"ports": [web]}})),
    )
    run.step("made node port", lambda: shown(c.patch(SERVICE, "c", {"spec": {"type": "NodePort"}}, run.ns)))


def node_ports_full(run: Run) -> None:
    """A Service needing a node port when every one of the range is held (created, or updated to add a port or to
    need a health check port): the server's allocator fails it with a 500 of its own, message included."""
    c = run.client
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": run.ns}}

    def service(name: str, count: int, kind: str = "NodePort") -> dict[str, Any]:
        ports = [{"name": f"p{i}", "port": 1000 + i, "protocol": "TCP", "targetPort": 80} for i in range(count)]
        return {**body, "metadata": {**body["metadata"], "name": name}, "spec": {"type": kind, "ports": ports}}

    def refusal(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except errors.ServerError as exc:
            return {"status": exc.status, "message": exc.api_message, "causes": [cause.message for cause in exc.causes]}

    # Fill the range whatever other Services of the control plane hold: Services of as many ports as will go, the
    # number halved each time the server finds the range too short (not in the transcript: what is held differs).
    fillers: list[str] = []
    count = 32768 - 30000
    try:
        while count:
            try:
                c.create(service(f"fill{len(fillers)}", count))
                fillers.append(f"fill{len(fillers)}")
            except errors.ServerError:
                count //= 2
        last = fillers.pop()  # one port freed: the last filler made again with one port fewer
        fewer = len(c.get(SERVICE, last, run.ns)["spec"]["ports"]) - 1
        c.delete(SERVICE, last, run.ns)
        if fewer:
            fillers.append(c.create(service(last, fewer))["metadata"]["name"])
        run.step("the last free port", lambda: c.create(service("a", 1))["spec"]["type"])
        run.step("created", lambda: refusal(lambda: c.create(service("b", 1, kind="LoadBalancer"))))
        live = c.get(SERVICE, "a", run.ns)
        added = {
            **live,
            "spec": {**live["spec"], "ports": [*live["spec"]["ports"], service("x", 2)["spec"]["ports"][1]]},
        }
        run.step("a port added", lambda: refusal(lambda: c.replace(SERVICE, added)))
        local = {"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}}
        run.step("made local", lambda: refusal(lambda: c.patch(SERVICE, "a", local, run.ns)))
    finally:
        for name in [*fillers, "a"]:
            with contextlib.suppress(errors.NotFound):
                c.delete(SERVICE, name, run.ns)


SEQUENCES: list[Callable[[Run], None]] = [
    create_get_list,
    generate_name,
    replace_with_a_stale_version,
    merge_and_json_patches,
    apply_by_managers,
    apply_conflicts,
    secret_string_data,
    status_subresource,
    generation,
    finalizers,
    delete_preconditions,
    owner_references,
    error_answers,
    writes_that_change_nothing,
    immutable_fields,
    service_cluster_ip,
    claim_spec,
    spelt_out_defaults,
    defaults_filled,
    quantities,
    node_ports,
    node_ports_full,
    pod_spec_refusals,
    undecodable_values,
    undecodable_quantities,
    undecodable_times,
    job_labels,
]


@pytest.fixture
def server(kube: kube_client.Client, namespace: str, widget_kind: kinds.Kind) -> Iterator[Run]:
    assert widget_kind == WIDGET
    yield Run(kube, namespace)


@pytest.mark.parametrize("sequence", SEQUENCES, ids=[s.__name__ for s in SEQUENCES])
def test_the_fake_answers_a_sequence_as_the_api_server_does(server: Run, sequence: Callable[[Run], None]) -> None:
    fake = Run(FakeClient(kinds=[WIDGET, POD_TEMPLATE]), server.ns)
    sequence(server)
    sequence(fake)

    assert fake.transcript == server.transcript, "\n".join(_differences(server.transcript, fake.transcript))


def _differences(on_server: list[tuple[str, Any]], on_fake: list[tuple[str, Any]]) -> Iterator[str]:
    """The steps whose answers differ, as a diff of their JSON (the API server's on the left, the fake's on the
    right)."""
    for (label, expected), (_, got) in zip(on_server, on_fake, strict=True):
        if expected != got:
            yield f"-- {label}"
            yield from difflib.unified_diff(_lines(expected), _lines(got), "API server", "FakeClient", lineterm="")


def _lines(answer: Any) -> list[str]:
    return json.dumps(answer, indent=1, sort_keys=True, default=str).splitlines()
