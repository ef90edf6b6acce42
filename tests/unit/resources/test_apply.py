"""Behaviour of okt.resources.apply: the create / update / unchanged decision and the one request it takes."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import hypothesis
import jsonpatch
import pytest
from hypothesis import strategies as st

from okt import errors
from okt.kube import kinds, objects
from okt.names import DEFAULT_PREFIX, Names
from okt.resources import apply, checksum, drift_check, resource, take_over, writing
from okt.testing import FakeClient

OWNER = objects.CustomResource(
    {
        "apiVersion": "test.okt.io/v1",
        "kind": "Widget",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"size": 2},
    }
)
LABELS = Names()


class Config(resource.MutableResource):
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
  mode: fast
"""


class FrozenConfig(Config):
    """The same ConfigMap as a create-only resource."""

    mutable = False


class AnnotatedConfig(Config):
    """Hashes every annotation too (a ``hashable_ref`` override), including okt's own once it is stamped."""

    def hashable_ref(self) -> Any:
        return {**super().hashable_ref(), "annotations": self.desired["metadata"].get("annotations") or {}}


class Seeded(Config):
    """A resource whose initial data is generated once (on creation or repair)."""

    def mutate_with_initial_data(self) -> None:
        self.desired.setdefault("data", {})["seed"] = "generated"


def prepared(cls: type[resource.Resource] = Config, owner: objects.CustomResource = OWNER) -> resource.Resource:
    res = cls(owner)
    apply.prepare(res, owner, LABELS)
    return res


def as_live(res: resource.Resource, **server_fields: Any) -> dict[str, Any]:
    """What the server returns after creating ``res``: its desired state plus server-owned fields."""
    live = copy.deepcopy(res.desired)
    live["metadata"].update(
        {"uid": "child-uid", "resourceVersion": "41", "creationTimestamp": "2026-11-21T10:00:00Z"}, **server_fields
    )
    return live


# --- Labels ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "hash_annotation", "owner_label"),
    [
        ("okt.io", "okt.io/okt-hash", "okt.io/owner-uid"),
        ("cache.example.com", "cache.example.com/okt-hash", "cache.example.com/owner-uid"),
    ],
)
def test_label_names_derive_from_the_prefix(prefix: str, hash_annotation: str, owner_label: str) -> None:
    labels = Names(prefix)

    assert (labels.hash_annotation, labels.owner_label) == (hash_annotation, owner_label)


def test_the_default_prefix_is_okt_io() -> None:
    assert Names().prefix == DEFAULT_PREFIX == "okt.io"


# --- prepare --------------------------------------------------------------------------------------------------------


def test_prepare_stamps_owner_reference_owner_label_and_hash() -> None:
    res = Config(OWNER)

    digest = apply.prepare(res, OWNER, LABELS)

    meta = res.desired["metadata"]
    assert meta["ownerReferences"] == [OWNER.owner_reference()]
    assert meta["labels"] == {"okt.io/owner-uid": "uid-1"}
    assert meta["annotations"] == {"okt.io/okt-hash": digest}
    del meta["annotations"]["okt.io/okt-hash"]  # the hash covers what the author set, never itself
    assert digest == checksum.checksum(res.hashable_ref())


def test_prepare_keeps_the_owner_references_the_author_set_beside_okts() -> None:
    shared_by = {"apiVersion": "v1", "kind": "ConfigMap", "name": "catalog", "uid": "uid-9"}
    res = Config(OWNER)
    res.desired["metadata"]["ownerReferences"] = [shared_by, {**OWNER.owner_reference(), "controller": False}]

    for _ in range(2):
        apply.prepare(res, OWNER, LABELS)

    assert res.desired["metadata"]["ownerReferences"] == [shared_by, OWNER.owner_reference()]


@pytest.mark.parametrize("change", ["added", "removed"])
def test_an_owner_reference_the_author_adds_or_drops_is_written_to_the_child(change: str) -> None:
    shared_by = {"apiVersion": "v1", "kind": "ConfigMap", "name": "catalog", "uid": "uid-9"}
    before, after = Config(OWNER), Config(OWNER)
    (after if change == "added" else before).desired["metadata"]["ownerReferences"] = [shared_by]
    apply.prepare(before, OWNER, LABELS)
    apply.prepare(after, OWNER, LABELS)

    decision = apply.decide(after, as_live(before), OWNER, LABELS)

    assert (decision.action, decision.reason) == (apply.Action.UPDATE, "hash changed")


def test_prepare_without_owner_only_stamps_the_hash() -> None:
    res = Config(OWNER)

    apply.prepare(res, None, LABELS)

    assert set(res.desired["metadata"]) == {"name", "namespace", "annotations"}


def test_the_hash_covers_the_owner_label_so_another_owner_means_another_hash() -> None:
    other_owner = objects.CustomResource({**OWNER.raw, "metadata": {**OWNER.metadata, "uid": "uid-2"}})

    assert apply.prepare(Config(OWNER), OWNER, LABELS) != apply.prepare(Config(OWNER), other_owner, LABELS)


@pytest.mark.parametrize(
    "hashed_annotations",
    [pytest.param(False, id="default-hashable-ref"), pytest.param(True, id="ref-with-annotations")],
)
@pytest.mark.parametrize("repeats", [1, 2, 5])
def test_prepare_is_idempotent(hashed_annotations: bool, repeats: int) -> None:
    res = AnnotatedConfig(OWNER) if hashed_annotations else Config(OWNER)
    first = apply.prepare(res, OWNER, LABELS)
    desired = copy.deepcopy(res.desired)

    digests = {apply.prepare(res, OWNER, LABELS) for _ in range(repeats)}

    assert digests == {first}
    assert res.desired == desired


def test_prepare_refuses_a_mutation_that_renamed_the_resource() -> None:
    res = Config(OWNER)
    res.desired["metadata"]["name"] = "renamed"

    with pytest.raises(Exception, match="may not change name/namespace"):
        apply.prepare(res, OWNER, LABELS)


# --- decide ---------------------------------------------------------------------------------------------------------


def test_a_missing_child_is_created() -> None:
    assert apply.decide(prepared(), None, OWNER, LABELS) == apply.Decision(apply.Action.CREATE, "missing")


def test_a_child_as_we_wrote_it_is_unchanged() -> None:
    res = prepared()

    decision = apply.decide(res, as_live(res), OWNER, LABELS)

    assert decision == apply.Decision(apply.Action.UNCHANGED, "hash and fields match")


@pytest.mark.parametrize(
    "server_edit",
    [
        pytest.param(
            lambda live: live["metadata"]["annotations"].update({"someone/else": "x"}), id="foreign-annotation"
        ),
        pytest.param(lambda live: live["metadata"]["labels"].update({"team": "storage"}), id="foreign-label"),
        pytest.param(lambda live: live.update({"binaryData": {"blob": "AAAA"}}), id="extra-top-level-field"),
        pytest.param(lambda live: live["metadata"].update({"managedFields": [{"manager": "kubectl"}]}), id="managed"),
        pytest.param(lambda live: live["metadata"].update({"generation": 7}), id="generation"),
        pytest.param(
            lambda live: live["metadata"]["ownerReferences"].append({"uid": "other", "controller": False}),
            id="extra-non-controller-owner",
        ),
    ],
)
def test_what_others_add_to_a_child_does_not_cause_an_update(server_edit: Any) -> None:
    res = prepared()
    live = as_live(res)
    server_edit(live)

    assert apply.decide(res, live, OWNER, LABELS).action is apply.Action.UNCHANGED


@pytest.mark.parametrize(
    ("edit", "reason", "drift"),
    [
        pytest.param(
            lambda live: live["data"].update({"size": "5"}), "drift", (".data.size",), id="managed-value-changed"
        ),
        pytest.param(lambda live: live["data"].pop("mode"), "drift", (".data.mode",), id="managed-key-removed"),
        pytest.param(
            lambda live: live["metadata"]["labels"].pop("okt.io/owner-uid"),
            "drift",
            ('.metadata.labels["okt.io/owner-uid"]',),
            id="owner-label-removed",
        ),
        pytest.param(
            lambda live: live["metadata"]["annotations"].update({"okt.io/okt-hash": "old"}),
            "hash changed",
            ('.metadata.annotations["okt.io/okt-hash"]',),
            id="stale-hash",
        ),
        pytest.param(
            lambda live: live["metadata"].update({"ownerReferences": []}),
            "drift",
            (".metadata.ownerReferences",),
            id="owner-reference-removed",
        ),
    ],
)
def test_a_changed_desired_state_or_a_drifted_child_is_updated(edit: Any, reason: str, drift: tuple[str, ...]) -> None:
    res = prepared()
    live = as_live(res)
    edit(live)

    assert apply.decide(res, live, OWNER, LABELS) == apply.Decision(apply.Action.UPDATE, reason, drift)


class SizeOnly(Config):
    """Hashes ``data.size`` and okt's labels only: ``data.mode`` is managed by someone else (OKT's contract)."""

    def hashable_ref(self) -> Any:
        return {"data": {"size": self.desired["data"]["size"]}, "labels": self.desired["metadata"]["labels"]}


class VersionOnly(Config):
    """Hashes a version string: no field of the object is compared."""

    def hashable_ref(self) -> Any:
        return "v1"


def test_a_field_outside_hashable_ref_is_neither_hashed_nor_repaired() -> None:
    res = prepared(SizeOnly)
    live = as_live(res)
    live["data"]["mode"] = "safe"  # another controller's value
    live["metadata"]["annotations"]["team"] = "edited by hand"

    assert apply.decide(res, live, OWNER, LABELS) == apply.Decision(apply.Action.UNCHANGED, "hash and fields match")
    assert drift_check.drift_view(res) == {
        "data": {"size": "2"},
        "metadata": {"labels": res.desired["metadata"]["labels"]},
    }


def test_a_field_inside_hashable_ref_is_still_repaired() -> None:
    res = prepared(SizeOnly)
    live = as_live(res)
    live["data"]["size"] = "9"

    assert apply.decide(res, live, OWNER, LABELS) == apply.Decision(apply.Action.UPDATE, "drift", (".data.size",))


def test_a_hashable_ref_that_is_not_an_object_covers_no_field_but_ownership_is_still_repaired() -> None:
    res = prepared(VersionOnly)
    live = as_live(res)
    live["data"] = {"size": "9"}

    assert apply.decide(res, live, OWNER, LABELS).action is apply.Action.UNCHANGED
    live["metadata"]["ownerReferences"] = []
    assert apply.decide(res, live, OWNER, LABELS) == apply.Decision(
        apply.Action.UPDATE, "drift", (".metadata.ownerReferences",)
    )


@pytest.mark.parametrize(
    ("edit", "drift"),
    [
        pytest.param(lambda meta: None, (), id="in-place"),
        pytest.param(lambda meta: meta["labels"].update({"team": "storage"}), (), id="other-labels-beside-it"),
        pytest.param(
            lambda meta: meta["labels"].pop("okt.io/owner-uid"), ('.metadata.labels["okt.io/owner-uid"]',), id="removed"
        ),
        pytest.param(
            lambda meta: meta["labels"].update({"okt.io/owner-uid": "uid-2"}),
            ('.metadata.labels["okt.io/owner-uid"]',),
            id="another-owner",
        ),
        pytest.param(
            lambda meta: meta["labels"].update({"okt.io/owner-uid": None}),
            ('.metadata.labels["okt.io/owner-uid"]',),
            id="null",
        ),
        pytest.param(
            lambda meta: meta["labels"].update({"okt.io/owner-uid": ["uid-1"]}),
            ('.metadata.labels["okt.io/owner-uid"]',),
            id="not-a-string",
        ),
        pytest.param(lambda meta: meta.update({"labels": None}), (".metadata.labels",), id="no-labels"),
        pytest.param(lambda meta: meta.update({"labels": "uid-1"}), (".metadata.labels",), id="labels-not-a-mapping"),
    ],
)
def test_the_owner_label_is_repaired_whatever_hashable_ref_covers(edit: Any, drift: tuple[str, ...]) -> None:
    res = prepared(VersionOnly)
    live = as_live(res)
    edit(live["metadata"])

    expected = (
        apply.Decision(apply.Action.UPDATE, "drift", drift)
        if drift
        else apply.Decision(apply.Action.UNCHANGED, "hash and fields match")
    )
    assert apply.decide(res, live, OWNER, LABELS) == expected


def test_the_default_hashable_ref_compares_every_field_okt_sets() -> None:
    res = prepared()

    assert drift_check.drift_view(res) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": res.desired["data"],
        "metadata": {k: res.desired["metadata"][k] for k in ("labels", "annotations")},
    }


def test_a_create_only_resource_that_exists_is_never_updated() -> None:
    res = prepared(FrozenConfig)
    live = as_live(res)
    live["data"] = {"size": "999"}

    decision = apply.decide(res, live, OWNER, LABELS)

    assert decision == apply.Decision(apply.Action.UNCHANGED, "immutable resource exists")


# --- update_patch ---------------------------------------------------------------------------------------------------


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, as the API server applies ``application/merge-patch+json``."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def test_an_update_patch_is_guarded_by_the_live_resource_version() -> None:
    res = prepared()

    patch = apply.update_patch(res, as_live(res), OWNER)

    assert patch["metadata"]["resourceVersion"] == "41"


def test_an_update_patch_never_sends_identity_or_status() -> None:
    res = prepared()
    res.desired["status"] = {"ignored": True}

    patch = apply.update_patch(res, as_live(res), OWNER)

    assert not {"apiVersion", "kind", "status"} & set(patch)
    assert not {"name", "namespace"} & set(patch["metadata"])


def test_a_replaced_field_loses_the_keys_okt_no_longer_sets_and_keeps_the_rest() -> None:
    res = prepared()
    live = as_live(res)
    live["data"]["legacy"] = "old"

    patched = merge(live, apply.update_patch(res, live, OWNER))

    assert patched["data"] == {"size": "2", "mode": "fast"}


def test_labels_and_annotations_of_others_survive_an_update() -> None:
    res = prepared()
    live = as_live(res)
    live["metadata"]["labels"]["team"] = "storage"
    live["metadata"]["annotations"]["note"] = "keep me"
    live["data"]["size"] = "5"

    patched = merge(live, apply.update_patch(res, live, OWNER))

    assert patched["metadata"]["labels"] == {"okt.io/owner-uid": "uid-1", "team": "storage"}
    assert patched["metadata"]["annotations"]["note"] == "keep me"
    assert apply.decide(res, patched, OWNER, LABELS).action is apply.Action.UNCHANGED


def test_a_field_written_as_null_is_removed_by_the_update_and_matches_from_then_on() -> None:
    res = Config(OWNER)
    res.desired["spec"] = {"strategy": None, "replicas": 2}
    apply.prepare(res, OWNER, LABELS)
    live = as_live(res)
    live["spec"] = {"strategy": {"type": "Recreate"}, "replicas": 2}
    live["metadata"]["annotations"]["okt.io/okt-hash"] = "written-before-the-field-was-dropped"

    patched = merge(live, apply.update_patch(res, live, OWNER))

    assert patched["spec"] == {"replicas": 2}
    assert apply.decide(res, patched, OWNER, LABELS).action is apply.Action.UNCHANGED


def test_a_child_controlled_by_another_owner_is_refused_never_adopted() -> None:
    res = prepared()
    live = as_live(res)
    foreign = {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "other", "controller": True}
    live["metadata"]["ownerReferences"] = [foreign]

    decision = apply.decide(res, live, OWNER, LABELS)

    assert decision.action is apply.Action.REFUSE
    assert decision.reason == "controlled by Other/x"


def test_an_update_adds_our_controller_reference_and_keeps_other_owners() -> None:
    res = prepared()
    live = as_live(res)
    other = {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "other"}
    live["metadata"]["ownerReferences"] = [other]

    assert apply.decide(res, live, OWNER, LABELS).action is apply.Action.UPDATE
    patch = apply.update_patch(res, live, OWNER)

    assert patch["metadata"]["ownerReferences"] == [{**other, "controller": False}, OWNER.owner_reference()]


def test_an_update_of_an_owned_child_does_not_rewrite_owner_references() -> None:
    res = prepared()

    patch = apply.update_patch(res, as_live(res), OWNER)

    assert "ownerReferences" not in patch["metadata"]


MOVED = Names("okt.io", ("old.example.com",))
"""Names of a reconciler whose prefix was ``old.example.com`` in an earlier version."""


def test_a_merge_update_removes_the_owner_label_and_checksum_okt_wrote_under_a_legacy_prefix() -> None:
    res = prepared()
    live = as_live(res)
    live["metadata"]["labels"]["old.example.com/owner-uid"] = "uid-1"
    live["metadata"]["annotations"]["old.example.com/okt-hash"] = "written-by-the-earlier-version"
    live["metadata"]["labels"]["old.example.com/team"] = "not okt's"
    options = writing.WriteOptions(writing.Strategy.MERGE, "okt", MOVED.hash_annotation, *MOVED.legacy_child_keys())

    patched = merge(live, apply.update_patch(res, live, OWNER, options))

    assert patched["metadata"]["labels"] == {"okt.io/owner-uid": "uid-1", "old.example.com/team": "not okt's"}
    assert "old.example.com/okt-hash" not in patched["metadata"]["annotations"]
    assert "old.example.com" not in json.dumps(apply.update_patch(res, as_live(res), OWNER, options))


@pytest.mark.parametrize(
    ("label", "names", "pruned"),
    [
        pytest.param("old.example.com/owner-uid", MOVED, True, id="legacy-label"),
        pytest.param("old.example.com/owner-uid", Names(), False, id="legacy-label-without-legacy-prefixes"),
        pytest.param("other.example.com/owner-uid", MOVED, False, id="another-prefix"),
    ],
)
def test_a_child_labelled_under_a_legacy_prefix_is_prunable_as_okts_own(label: str, names: Names, pruned: bool) -> None:
    child = pruned_child()
    child["metadata"]["labels"] = {label: "o"}

    assert apply.prunable(child, "o", names) is pruned


string_maps = st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=6)


@hypothesis.given(live_data=string_maps, desired_data=string_maps)
def test_applying_an_update_patch_makes_a_replaced_field_exactly_the_desired_one(
    live_data: dict[str, str], desired_data: dict[str, str]
) -> None:
    res = Config(OWNER)
    res.desired["data"] = dict(desired_data)
    apply.prepare(res, OWNER, LABELS)
    live = as_live(res)
    live["data"] = dict(live_data)

    patched = merge(live, apply.update_patch(res, live, OWNER))

    assert patched.get("data", {}) == desired_data


# --- the requests ---------------------------------------------------------------------------------------------------


class RecordingClient:
    """The slice of :class:`okt.kube.client.Client` that apply uses, answering like an API server would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.managed_fields: list[dict[str, Any]] = []
        self.uid = "child-uid"

    def kind_of(self, obj: Mapping[str, Any]) -> kinds.Kind:
        found = kinds.builtin(str(obj["apiVersion"]), str(obj["kind"]))
        assert found is not None
        return found

    def create(self, obj: Mapping[str, Any], kind: kinds.Kind | None = None) -> dict[str, Any]:
        self.calls.append(("create", copy.deepcopy(obj)))
        return {**copy.deepcopy(dict(obj)), "metadata": {**obj["metadata"], "resourceVersion": "1"}}

    def get(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", (kind.plural, name, namespace)))
        meta = {"name": name, "namespace": namespace, "uid": self.uid, "resourceVersion": "2"}
        return {"metadata": {**meta, "managedFields": copy.deepcopy(self.managed_fields)}}

    def patch(
        self, kind: kinds.Kind, name: str, patch: Any, namespace: str | None = None, *, patch_type: str = "merge"
    ) -> dict[str, Any]:
        self.calls.append((f"patch-{patch_type}", (kind.plural, name, namespace, copy.deepcopy(patch))))
        if patch_type == "json" and all("/managedFields/" in op["path"] for op in patch):
            patched = jsonpatch.apply_patch({"metadata": {"managedFields": self.managed_fields}}, patch)
            self.managed_fields = patched["metadata"]["managedFields"]
        return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": "2"}}

    def apply(self, obj: Mapping[str, Any], kind: kinds.Kind, *, field_manager: str) -> dict[str, Any]:
        self.calls.append(("apply", (field_manager, copy.deepcopy(obj))))
        answer = copy.deepcopy(dict(obj))
        answer["metadata"] = {**answer["metadata"], "resourceVersion": "3", "managedFields": self.managed_fields}
        return answer

    def delete(
        self,
        kind: kinds.Kind,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> bool:
        self.calls.append(("delete", (kind.plural, name, namespace, uid, resource_version)))
        return True


def test_create_applies_the_initial_data_sends_one_create_and_observes_the_answer() -> None:
    client = RecordingClient()
    res = prepared(Seeded)
    observed: list[Mapping[str, Any]] = []

    created = apply.create(client, res, observed.append, MERGE)

    assert [verb for verb, _ in client.calls] == ["create"]
    assert client.calls[0][1]["data"]["seed"] == "generated"
    assert res.live is created
    assert observed == [created]


def test_update_applies_the_initial_data_and_sends_one_guarded_merge_patch() -> None:
    client = RecordingClient()
    res = prepared(Seeded)
    live = as_live(prepared(Config))
    observed: list[Mapping[str, Any]] = []

    apply.update(client, res, live, OWNER, observed.append, MERGE)

    assert len(client.calls) == 1
    verb, (plural, name, namespace, patch) = client.calls[0]
    assert (verb, plural, name, namespace) == ("patch-merge", "configmaps", "demo-config", "ns")
    assert patch["data"]["seed"] == "generated"
    assert patch["metadata"]["resourceVersion"] == "41"
    assert res.live == observed[0]


def test_delete_is_preconditioned_on_the_uid_and_the_resource_version_it_read() -> None:
    client = RecordingClient()
    meta = {"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7"}

    apply.delete(client, {"apiVersion": "v1", "kind": "Service", "metadata": meta}, "o", Names())

    assert client.calls == [("delete", ("services", "s", "ns", "u", "7"))]


def pruned_child(owner_uid: str = "o") -> dict[str, Any]:
    reference = {"apiVersion": "v1", "kind": "Widget", "name": "w", "uid": owner_uid, "controller": True}
    labels = {Names().owner_label: "o"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "labels": labels, "ownerReferences": [reference]},
    }


@pytest.mark.parametrize(
    ("since", "deleted"),
    [
        pytest.param({"data": {"k": "v"}}, True, id="changed-but-still-ours"),
        pytest.param(
            {"metadata": {"ownerReferences": pruned_child("other")["metadata"]["ownerReferences"]}}, False, id="adopted"
        ),
        pytest.param({"metadata": {"labels": {Names().owner_label: None}}}, False, id="label-taken-off"),
    ],
)
def test_delete_judges_again_an_object_that_changed_since_it_was_read(since: dict[str, Any], deleted: bool) -> None:
    client = FakeClient()
    read = client.create(pruned_child())
    client.patch(kinds.CONFIG_MAP, "c", since, "ns")

    assert apply.delete(client, read, "o", Names()) is deleted
    assert (client.get_or_none(kinds.CONFIG_MAP, "c", "ns") is None) is deleted


MERGE = writing.WriteOptions(writing.Strategy.MERGE)


@pytest.mark.parametrize("strategy", [writing.Strategy.APPLY, writing.Strategy.MERGE])
def test_an_update_of_a_child_deleted_and_created_again_since_it_was_read_is_a_conflict_writing_nothing(
    strategy: writing.Strategy,
) -> None:
    client = FakeClient()
    read = apply.create(client, prepared(Config), lambda _: None)
    client.delete(kinds.CONFIG_MAP, "demo-config", "ns")
    theirs = client.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo-config", "namespace": "ns"}}
    )
    observed: list[Mapping[str, Any]] = []

    with pytest.raises(errors.Conflict):
        apply.update(client, prepared(Seeded), read, OWNER, observed.append, writing.WriteOptions(strategy))

    assert client.get(kinds.CONFIG_MAP, "demo-config", "ns") == theirs
    assert observed == []


@pytest.mark.parametrize("write", ["create", "update"])
def test_apply_strategy_sends_the_whole_desired_object_as_one_apply_of_okt(write: str) -> None:
    client = RecordingClient()
    res = prepared(Seeded)
    observed: list[Mapping[str, Any]] = []

    if write == "create":
        apply.create(client, res, observed.append)
    else:
        apply.update(client, res, as_live(prepared(Config), managedFields=[]), OWNER, observed.append)

    assert [verb for verb, _ in client.calls] == ["apply"]
    manager, body = client.calls[0][1]
    assert manager == "okt"
    assert body["data"]["seed"] == "generated"
    assert "resourceVersion" not in body["metadata"]
    assert body["metadata"]["ownerReferences"] == [OWNER.owner_reference()]
    assert res.live == observed[0]


def test_apply_strategy_uses_the_configured_field_manager() -> None:
    client = RecordingClient()

    apply.create(client, prepared(Config), lambda _: None, writing.WriteOptions(field_manager="widgets-operator"))

    assert client.calls[0][1][0] == "widgets-operator"


LEGACY = {"manager": "okt", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
APPLIED = {"manager": "okt", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1"}
FOREIGN = {"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}


def test_an_object_of_the_merge_path_is_taken_over_then_applied_again() -> None:
    client = RecordingClient()
    client.managed_fields = [
        {**APPLIED, "fieldsV1": {"f:data": {"f:a": {}}}},
        {**LEGACY, "fieldsV1": {"f:data": {"f:old": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}},
        {**FOREIGN, "fieldsV1": {"f:data": {"f:theirs": {}}}},
    ]
    read = client.managed_fields

    apply.update(client, prepared(Config), as_live(prepared(Config), managedFields=read), OWNER, lambda _: None)

    # Taken over first, from the object read anew: the apply writes the checksum, and a take-over that never came
    # after it would be lost.
    verbs = [verb for verb, _ in client.calls]
    assert verbs == ["get", "patch-json", "apply"]
    first, second, replace, remove = client.calls[1][1][3]
    # Tested: okt's own entries as read, not the resourceVersion another manager's write (a status) changes.
    assert first == {"op": "test", "path": "/metadata/managedFields/0", "value": read[0]}
    assert second["path"] == "/metadata/managedFields/1"
    assert (second["op"], second["value"]["operation"]) == ("test", "Update")
    assert (replace["op"], replace["path"]) == ("replace", "/metadata/managedFields/0")
    assert (replace["value"]["manager"], replace["value"]["operation"]) == ("okt", "Apply")
    assert replace["value"]["fieldsV1"] == {
        "f:data": {"f:a": {}, "f:old": {}},
        "f:metadata": {"f:labels": {"f:x": {}}},
    }
    assert remove == {"op": "remove", "path": "/metadata/managedFields/1"}  # kubectl's entry is not touched


def test_a_take_over_without_an_apply_entry_puts_the_union_in_the_first_update_entrys_place() -> None:
    client = RecordingClient()
    client.managed_fields = [
        {**FOREIGN, "fieldsV1": {"f:data": {"f:theirs": {}}}},
        {**LEGACY, "fieldsV1": {"f:data": {"f:old": {}}}},
    ]
    live = as_live(prepared(Config), managedFields=client.managed_fields)

    apply.update(client, prepared(Config), live, OWNER, lambda _: None)

    patch = client.calls[1][1][3]
    assert [(op["op"], op["path"]) for op in patch] == [
        ("test", "/metadata/managedFields/1"),
        ("replace", "/metadata/managedFields/1"),
    ]
    assert (patch[1]["value"]["operation"], patch[1]["value"]["fieldsV1"]) == ("Apply", {"f:data": {"f:old": {}}})


def test_the_entries_of_legacy_field_managers_are_taken_over_whatever_their_operation_but_for_a_subresource() -> None:
    client = RecordingClient()
    renamed = {**APPLIED, "manager": "new-operator"}
    client.managed_fields = [
        {**APPLIED, "fieldsV1": {"f:data": {"f:old": {}}}},
        {**LEGACY, "fieldsV1": {"f:data": {"f:merged": {}}}},
        {**LEGACY, "subresource": "status", "fieldsV1": {"f:status": {}}},
        {**renamed, "fieldsV1": {"f:data": {"f:a": {}}}},
        {**FOREIGN, "fieldsV1": {"f:data": {"f:theirs": {}}}},
    ]
    options = writing.WriteOptions(field_manager="new-operator", legacy_field_managers=frozenset({"okt"}))
    live = as_live(prepared(Config), managedFields=client.managed_fields)

    apply.update(client, prepared(Config), live, OWNER, lambda _: None, options)

    assert [verb for verb, _ in client.calls] == ["get", "patch-json", "apply"]
    patch = client.calls[1][1][3]
    assert [(op["op"], op["path"]) for op in patch] == [
        ("test", "/metadata/managedFields/0"),
        ("test", "/metadata/managedFields/1"),
        ("test", "/metadata/managedFields/3"),
        ("replace", "/metadata/managedFields/3"),
        ("remove", "/metadata/managedFields/1"),
        ("remove", "/metadata/managedFields/0"),
    ]
    merged = patch[3]["value"]
    assert (merged["manager"], merged["operation"]) == ("new-operator", "Apply")
    assert merged["fieldsV1"] == {"f:data": {"f:a": {}, "f:old": {}, "f:merged": {}}}


def test_an_object_okt_only_ever_applied_is_written_once() -> None:
    client = RecordingClient()
    client.managed_fields = [{**APPLIED, "fieldsV1": {"f:data": {"f:a": {}}}}, {**FOREIGN, "fieldsV1": {}}]
    live = as_live(prepared(Config), managedFields=client.managed_fields)

    apply.update(client, prepared(Config), live, OWNER, lambda _: None)

    assert [verb for verb, _ in client.calls] == ["apply"]


def test_an_update_reads_no_child_whose_managed_fields_it_does_not_know_nor_one_the_cache_keeps() -> None:
    """A child without managedFields (a reader that keeps none, okt's FakeClient) is applied with no read and taken
    over from the apply's answer, applied again for the field the apply left; one as okt's cache keeps it (the
    entries a take-over moves, none here) is applied with no read."""
    client = RecordingClient()
    client.managed_fields = [{**LEGACY, "fieldsV1": {"f:data": {"f:old": {}}}}]
    live = as_live(prepared(Config))

    apply.update(client, prepared(Config), live, OWNER, lambda _: None)
    kept = take_over.FieldOwners(frozenset({writing.DEFAULT_FIELD_MANAGER})).kept(client.managed_fields)
    cached = as_live(prepared(Config), managedFields=kept)
    apply.update(client, prepared(Config), cached, OWNER, lambda _: None)

    assert kept == []  # taken over by the first update
    assert [verb for verb, _ in client.calls] == ["apply", "patch-json", "apply", "apply"]


@pytest.mark.parametrize(
    ("fields", "behind"),
    [
        pytest.param({"f:data": {".": {}, "f:mode": {}}}, False, id="a-field-of-the-template"),
        pytest.param({"f:data": {"f:old": {}}}, True, id="a-field-the-template-dropped"),
        pytest.param({"f:metadata": {"f:ownerReferences": {'k:{"uid":"uid-1"}': {".": {}}}}}, False, id="okts-item"),
        pytest.param({"f:metadata": {"f:ownerReferences": {'k:{"uid":"x"}': {}}}}, True, id="another-item"),
        pytest.param({"f:metadata": {"f:ownerReferences": {"k:not json": {}}}}, True, id="a-key-okt-cannot-read"),
    ],
)
def test_a_take_over_goes_before_the_apply_only_for_an_entry_holding_a_field_the_apply_would_leave(
    fields: dict[str, Any], behind: bool
) -> None:
    """Taken over after the apply, an entry holding only fields the apply sets costs no second apply, and a take-over
    lost then harms nothing; one holding a field the apply would leave is taken over first, before the checksum."""
    client = RecordingClient()
    client.managed_fields = [{**APPLIED, "fieldsV1": {}}, {**LEGACY, "fieldsV1": fields}]
    live = as_live(prepared(Config), managedFields=client.managed_fields)

    apply.update(client, prepared(Config), live, OWNER, lambda _: None)

    verbs = [verb for verb, _ in client.calls]
    assert verbs == (["get", "patch-json", "apply"] if behind else ["apply", "patch-json"])
    assert [entry["operation"] for entry in client.managed_fields] == ["Apply"]


def test_a_json_copy_equals_its_tree_and_shares_nothing_mutable_with_it() -> None:
    tree = {"spec": {"ports": [{"port": 80}], "args": ("-m", {"n": 1})}, "replicas": 2, "name": "x", "none": None}
    copied = apply.json_copy(tree)
    assert json.dumps(copied) == json.dumps(tree)
    copied["spec"]["ports"][0]["port"] = 81
    copied["spec"]["args"][1]["n"] = 2
    assert tree["spec"]["ports"][0]["port"] == 80
    assert tree["spec"]["args"][1] == {"n": 1}


# --- What the server made of okt's write ----------------------------------------------------------------------------


class Flagged(Config):
    """A ConfigMap that also sets a zero value (``immutable: false``), as a built-in kind's field the server leaves
    out of what it stores."""

    def mutate_with_cr(self, cr: objects.CustomResource) -> None:
        self.desired["immutable"] = False


def left_out(res: resource.Resource) -> dict[str, Any]:
    live = as_live(res)
    live.pop("immutable")
    return live


def test_a_field_the_answer_to_okts_write_left_out_is_no_drift_while_it_stays_so() -> None:
    forms = drift_check.ServerForms()
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    view = drift_check.drift_view(res)
    written = left_out(res)
    forms.remember(view, res, written)
    found = checksum.mismatches(view, written)

    assert found == [(".immutable", None)]
    assert forms.explain(written, view, found)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda live: live.update({"immutable": True}), id="another-value-there"),
        pytest.param(lambda live: live["data"].update({"size": "5"}), id="another-field-too"),
        pytest.param(lambda live: live["metadata"].update({"uid": "recreated"}), id="another-object"),
    ],
)
def test_anything_else_than_what_the_server_made_of_okts_write_is_drift(edit: Any) -> None:
    forms = drift_check.ServerForms()
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    view = drift_check.drift_view(res)
    forms.remember(view, res, left_out(res))
    live = left_out(res)
    edit(live)

    assert not forms.explain(live, view, checksum.mismatches(view, live))


def test_another_desired_state_is_compared_as_ever() -> None:
    forms = drift_check.ServerForms()
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    forms.remember(drift_check.drift_view(res), res, left_out(res))
    res.desired["data"]["mode"] = "slow"
    view = drift_check.drift_view(res)
    live = left_out(res)

    assert not forms.explain(live, view, checksum.mismatches(view, live))


def test_the_view_is_built_from_the_resource_when_its_write_left_the_desired_object_as_it_was() -> None:
    forms = drift_check.ServerForms()
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    view = drift_check.drift_view(res)
    forms.remember(None, res, left_out(res))

    assert forms.explain(left_out(res), view, checksum.mismatches(view, left_out(res)))
    forms.remember(None, res, as_live(res))
    assert not forms.explain(left_out(res), view, checksum.mismatches(view, left_out(res)))


def test_a_write_the_server_stored_as_sent_forgets_the_earlier_form() -> None:
    forms = drift_check.ServerForms()
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    view = drift_check.drift_view(res)
    forms.remember(view, res, left_out(res))
    forms.remember(view, res, as_live(res))

    assert not forms.explain(left_out(res), view, checksum.mismatches(view, left_out(res)))


class FlaggedService(resource.MutableResource):
    """A Service whose port leaves its protocol to the server, and that sets a zero value the server leaves out."""

    api_version = "v1"
    kind = "Service"
    template = """
apiVersion: v1
kind: Service
metadata:
  name: {{ name }}-web
  namespace: {{ namespace }}
spec:
  ports:
    - port: 80
  publishNotReadyAddresses: false
"""


@pytest.mark.parametrize("strategy", list(writing.Strategy))
def test_what_the_server_made_of_a_write_is_remembered_as_the_strategys_drift_check_compares(
    strategy: writing.Strategy,
) -> None:
    forms = drift_check.ServerForms()
    res = prepared(FlaggedService)
    keyed = strategy is writing.Strategy.APPLY
    written = as_live(res)
    written["spec"]["ports"][0]["protocol"] = "TCP"
    del written["spec"]["publishNotReadyAddresses"]
    forms.remember(None, res, written, keyed=keyed)
    view = drift_check.drift_view(res, keyed=keyed)
    found = checksum.mismatches(view, written)

    assert found == [(".spec.publishNotReadyAddresses", None)]
    assert forms.explain(written, view, found)


def test_the_memory_keeps_only_the_newest_objects() -> None:
    forms = drift_check.ServerForms(limit=2)
    res = prepared(Flagged)
    res.mutate_with_cr(OWNER)
    view = drift_check.drift_view(res)
    lives = []
    for uid in ("a", "b", "c"):
        live = left_out(res)
        live["metadata"]["uid"] = uid
        forms.remember(view, res, live)
        lives.append(live)

    assert [forms.explain(live, view, checksum.mismatches(view, live)) for live in lives] == [False, True, True]


# --- The apply body -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("api_version", "kind", "spelled"),
    [
        ("v1", "Service", True),
        ("apps/v1", "Deployment", True),
        ("test.okt.io/v1", "Listener", False),
    ],
)
def test_only_a_built_in_kind_gets_its_ports_protocol_spelled_out(api_version: str, kind: str, spelled: bool) -> None:
    res = resource.MutableResource(
        OWNER,
        body={"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": {"ports": [{"port": 80}]}},
    )

    body = apply.apply_body(res)

    assert body["spec"]["ports"] == [{"port": 80, "protocol": "TCP"} if spelled else {"port": 80}]
    assert res.desired["spec"]["ports"] == [{"port": 80}]


@pytest.mark.parametrize(
    ("api_version", "kind", "spec", "sent"),
    [
        pytest.param(
            "apps/v1",
            "Deployment",
            {
                "template": {
                    "spec": {"containers": [{"name": "m", "resources": {"limits": {"cpu": 0.5, "memory": 1024}}}]}
                }
            },
            {
                "template": {
                    "spec": {"containers": [{"name": "m", "resources": {"limits": {"cpu": "0.5", "memory": "1024"}}}]}
                }
            },
            id="container",
        ),
        pytest.param(
            "v1",
            "PersistentVolumeClaim",
            {"resources": {"requests": {"storage": 1073741824}}},
            {"resources": {"requests": {"storage": "1073741824"}}},
            id="claim",
        ),
        pytest.param(
            "v1",
            "ResourceQuota",
            {"hard": {"pods": 10, "requests.cpu": 1.5, "requests.memory": "1Gi"}},
            {"hard": {"pods": "10", "requests.cpu": "1.5", "requests.memory": "1Gi"}},
            id="quota",
        ),
        pytest.param(
            "v1",
            "LimitRange",
            {
                "limits": [
                    {"type": "Container", "max": {"cpu": 2}, "default": {"cpu": 1}, "defaultRequest": {"cpu": 0.1}}
                ]
            },
            {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"cpu": "2"},
                        "default": {"cpu": "1"},
                        "defaultRequest": {"cpu": "0.1"},
                    }
                ]
            },
            id="limit-range",
        ),
        pytest.param(
            "v1",
            "Pod",
            {"overhead": {"cpu": 0.25}, "volumes": [{"name": "t", "emptyDir": {"sizeLimit": 1000}}]},
            {"overhead": {"cpu": "0.25"}, "volumes": [{"name": "t", "emptyDir": {"sizeLimit": "1000"}}]},
            id="pod",
        ),
        pytest.param(
            "apps/v1",
            "Deployment",
            {"replicas": 2, "template": {"spec": {"containers": [{"name": "m", "ports": [{"containerPort": 80}]}]}}},
            {
                "replicas": 2,
                "template": {
                    "spec": {"containers": [{"name": "m", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}
                },
            },
            id="numbers-elsewhere-stay",
        ),
        pytest.param(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            {
                "maxReplicas": 3,
                "metrics": [
                    {"type": "Pods", "pods": {"target": {"type": "AverageValue", "averageValue": 100}}},
                    {"type": "Resource", "resource": {"target": {"type": "Utilization", "averageUtilization": 80}}},
                ],
            },
            {
                "maxReplicas": 3,
                "metrics": [
                    {"type": "Pods", "pods": {"target": {"type": "AverageValue", "averageValue": "100"}}},
                    {"type": "Resource", "resource": {"target": {"type": "Utilization", "averageUtilization": 80}}},
                ],
            },
            id="autoscaler",
        ),
        pytest.param(
            "test.okt.io/v1",
            "Listener",
            {"resources": {"limits": {"cpu": 1}}, "hard": {"pods": 2}},
            {"resources": {"limits": {"cpu": 1}}, "hard": {"pods": 2}},
            id="custom-resource-untouched",
        ),
    ],
)
def test_a_built_in_kinds_quantities_are_applied_as_text(
    api_version: str, kind: str, spec: dict[str, Any], sent: dict[str, Any]
) -> None:
    res = resource.MutableResource(
        OWNER, body={"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    )
    desired = copy.deepcopy(res.desired)

    body = apply.apply_body(res)

    assert body["spec"] == sent
    assert res.desired == desired, "the desired object (hashed, compared) keeps the numbers"


@pytest.mark.parametrize(
    ("api_version", "kind", "body", "live", "expected"),
    [
        pytest.param(
            "v1",
            "ResourceQuota",
            {"spec": {"hard": {"requests.cpu": 0.5, "requests.memory": "1024Mi"}}},
            {"spec": {"hard": {"requests.cpu": "500m", "requests.memory": "1Gi"}}},
            True,
            id="quantity-field-canonical",
        ),
        pytest.param(
            "v1",
            "ConfigMap",
            {"data": {"limit": "1000"}},
            {"data": {"limit": "1k"}},
            False,
            id="config-map-value",
        ),
        pytest.param(
            "v1",
            "ConfigMap",
            {"metadata": {"name": "x", "labels": {"version": "2.0"}}},
            {"metadata": {"labels": {"version": "2"}}},
            False,
            id="label",
        ),
        pytest.param(
            "example.com/v1",
            "Listener",
            {"spec": {"resources": {"limits": {"cpu": "1000m"}}}},
            {"spec": {"resources": {"limits": {"cpu": "1"}}}},
            False,
            id="custom-resource-stored-as-written",
        ),
    ],
)
def test_only_a_built_in_kinds_quantity_fields_match_the_canonical_form_of_what_okt_wrote(
    api_version: str, kind: str, body: dict[str, Any], live: dict[str, Any], expected: bool
) -> None:
    res = resource.MutableResource(
        OWNER, body={"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, **body}
    )

    live = {"apiVersion": api_version, "kind": kind, **live}

    assert drift_check.in_place(res, live) is expected
    assert checksum.is_subset(drift_check.drift_view(res), live) is expected
