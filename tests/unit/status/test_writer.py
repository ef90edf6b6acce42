"""Behaviour of okt.status.writer: the status okt wants, the difference it writes, and no request when there is none."""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Mapping
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from okt import errors, testing
from okt.kube import kinds, objects
from okt.status import conditions, writer

KIND = kinds.Kind("test.okt.io/v1", "Widget", "widgets")
T0 = datetime.datetime(2026, 11, 21, 10, 0, 0, tzinfo=datetime.UTC)
READY_WIRE = {
    "type": "Ready",
    "status": "True",
    "reason": "Reconciled",
    "message": "",
    "lastTransitionTime": "2026-11-21T10:00:00Z",
    "observedGeneration": 2,
}


def cr(status: dict[str, Any] | None = None, generation: int = 2) -> objects.CustomResource:
    raw: dict[str, Any] = {
        "apiVersion": KIND.api_version,
        "kind": KIND.kind,
        "metadata": {"name": "demo", "namespace": "ns", "generation": generation, "resourceVersion": "17"},
    }
    if status is not None:
        raw["status"] = status
    return objects.CustomResource(raw)


def loaded(status: Mapping[str, Any]) -> conditions.Conditions:
    return conditions.Conditions.from_status(status, now=lambda: T0)


class RecordingClient:
    """The slice of :class:`okt.kube.client.Client` the writer uses; answers like the API server."""

    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        self.patches.append(
            {
                "kind": kind,
                "name": name,
                "namespace": namespace,
                "subresource": subresource,
                "body": copy.deepcopy(patch),
            }
        )
        return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": "18"}, "status": patch["status"]}


# --- desired_status -------------------------------------------------------------------------------------------------


def test_the_desired_status_keeps_fields_of_other_writers_and_sets_conditions_and_generation() -> None:
    live = {"phase": "Running", "replicas": 3, "conditions": [READY_WIRE], "observedGeneration": 1}

    wanted = writer.desired_status(live, loaded(live), 2, {"replicas": 4})

    assert wanted == {"phase": "Running", "replicas": 4, "conditions": [READY_WIRE], "observedGeneration": 2}


def test_the_desired_status_never_mutates_the_live_one() -> None:
    live = {"conditions": [READY_WIRE], "observedGeneration": 1}
    before = copy.deepcopy(live)
    working = loaded(live)
    working.set("Ready", False, "Broken", "x", 2)

    writer.desired_status(live, working, 2, {"extra": 1})

    assert live == before


def test_the_conditions_come_from_the_working_copy_not_from_extra() -> None:
    wanted = writer.desired_status({}, loaded({"conditions": [READY_WIRE]}), 2, {"conditions": []})

    assert wanted["conditions"] == [READY_WIRE]


# --- status_patch ---------------------------------------------------------------------------------------------------


def merge(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7386) as the API server does."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


@hypothesis.given(
    before=st.dictionaries(
        st.sampled_from("abcd"), st.integers(0, 3) | st.dictionaries(st.sampled_from("xyz"), st.integers(0, 3))
    ),
    after=st.dictionaries(
        st.sampled_from("abcd"),
        st.none() | st.integers(0, 3) | st.dictionaries(st.sampled_from("xyz"), st.none() | st.integers(0, 3)),
    ),
)
def test_after_one_status_patch_the_next_patch_is_empty(before: dict[str, Any], after: dict[str, Any]) -> None:
    # None in what okt wants removes a field (a status field set to None): once removed, it is no difference.
    wanted = {**before, **after}  # desired_status keeps the live top-level keys
    stored = merge(before, writer.status_patch(before, wanted))

    assert writer.status_patch(stored, wanted) == {}


@pytest.mark.parametrize(
    ("live", "wanted", "patch"),
    [
        pytest.param({"a": 1}, {"a": 1}, {}, id="same"),
        pytest.param({"a": 1}, {"a": 2}, {"a": 2}, id="changed"),
        pytest.param({}, {"a": 1}, {"a": 1}, id="added"),
        pytest.param({"a": 1, "b": 2}, {"a": 1}, {}, id="keys-only-in-live-are-not-touched"),
        pytest.param({"a": {"x": 1, "y": 2}}, {"a": {"y": 2, "x": 1}}, {}, id="key-order-does-not-matter"),
        pytest.param({"c": [1, 2]}, {"c": [2, 1]}, {"c": [2, 1]}, id="list-order-does"),
        pytest.param({"a": 1}, {"a": 1.0}, {}, id="same-number"),
        pytest.param({"a": None}, {"a": None}, {}, id="explicit-null"),
        pytest.param({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, {"a": {"y": None}}, id="nested-key-removed"),
        pytest.param({"a": {"x": {"p": 1, "q": 2}}}, {"a": {"x": {"p": 1}}}, {"a": {"x": {"q": None}}}, id="deeper"),
        pytest.param({"a": {"x": 1}}, {"a": {"x": 2, "z": 3}}, {"a": {"x": 2, "z": 3}}, id="nested-changed-added"),
        pytest.param({"a": {"x": 1}}, {"a": {}}, {"a": {"x": None}}, id="emptied"),
        pytest.param({"a": 1}, {"a": None}, {"a": None}, id="set-to-none"),
        pytest.param({}, {"a": None}, {}, id="none-and-absent"),
        pytest.param({"a": {"x": 1}}, {"a": {"x": None}}, {"a": {"x": None}}, id="nested-set-to-none"),
        pytest.param({"a": {}}, {"a": {"x": None}}, {}, id="nested-none-and-absent"),
    ],
)
def test_the_status_patch_holds_what_differs_at_every_depth(
    live: dict[str, Any], wanted: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert writer.status_patch(live, wanted) == patch


# --- write ----------------------------------------------------------------------------------------------------------


def test_nothing_to_change_sends_no_request() -> None:
    live = {"conditions": [READY_WIRE], "observedGeneration": 2}
    client = RecordingClient()
    observed: list[Mapping[str, Any]] = []

    written = writer.write(client, KIND, cr(live), writer.desired_status(live, loaded(live), 2), observed.append)

    assert written is None
    assert client.patches == []
    assert observed == []


def test_a_change_is_one_guarded_patch_of_the_status_subresource_with_only_the_difference() -> None:
    live = {"conditions": [READY_WIRE], "observedGeneration": 1, "phase": "Running"}
    client = RecordingClient()
    observed: list[Mapping[str, Any]] = []

    written = writer.write(client, KIND, cr(live), writer.desired_status(live, loaded(live), 2), observed.append)

    assert client.patches == [
        {
            "kind": KIND,
            "name": "demo",
            "namespace": "ns",
            "subresource": "status",
            "body": {"metadata": {"resourceVersion": "17"}, "status": {"observedGeneration": 2}},
        }
    ]
    assert observed == [written]


class BoundingClient(RecordingClient):
    """Refuses condition messages over ``limit`` bytes, as a hand-written CRD's schema has the API server do; the
    cause worded as ``wording`` says it (Kubernetes' wording changed between versions)."""

    def __init__(self, limit: int, wording: str) -> None:
        super().__init__()
        self.limit = limit
        self.wording = wording

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        for index, item in enumerate(patch["status"].get("conditions") or ()):
            if len(item["message"].encode("utf-8")) > self.limit:
                field = f"status.conditions[{index}].message"
                said = f'Invalid value: "{item["message"]}": {self.wording.format(self.limit)}'
                cause = errors.StatusCause("FieldValueInvalid", said, field)
                raise errors.Invalid(422, "Invalid", f"{field}: {said}", causes=[cause])
        return super().patch(kind, name, patch, namespace, subresource=subresource)


@pytest.mark.parametrize(
    "wording",
    ["status.conditions.message in body should be at most {} chars long", "Too long: may not be more than {} bytes"],
)
def test_condition_messages_a_schema_refuses_as_too_long_are_cut_to_its_limit(wording: str) -> None:
    live = {"conditions": [READY_WIRE]}
    working = loaded(live)
    working.set("Ready", False, "PermanentError", "it failed at most 5 times: " + "\u00e9" * 80, 2)
    working.set("Degraded", True, "PermanentError", "short", 2)
    client = BoundingClient(64, wording)

    written = writer.write(client, KIND, cr(live), writer.desired_status(live, working, 2), lambda _: None)

    assert written is not None and len(client.patches) == 1
    sent = client.patches[0]["body"]["status"]["conditions"]
    assert sent[0]["message"].startswith("it failed at most 5 times: \u00e9") and sent[0]["message"].endswith("\u2026")
    assert len(sent[0]["message"].encode("utf-8")) <= 64
    assert sent[1]["message"] == "short"


def test_a_condition_change_writes_the_whole_list_including_other_writers_conditions() -> None:
    foreign = {"type": "example.com/BackedUp", "status": "True", "reason": "Done", "lastTransitionTime": "2026-01-01"}
    live = {"conditions": [READY_WIRE, foreign], "observedGeneration": 2}
    working = loaded(live)
    working.set("Ready", False, "InvalidSpec", "spec.size: too small", 2)
    client = RecordingClient()

    writer.write(client, KIND, cr(live), writer.desired_status(live, working, 2), lambda obj: None)

    (sent,) = client.patches
    assert [item["type"] for item in sent["body"]["status"]["conditions"]] == ["Ready", "example.com/BackedUp"]
    assert sent["body"]["status"]["conditions"][1] == foreign
    assert set(sent["body"]["status"]) == {"conditions"}


extra_fields = st.dictionaries(
    st.sampled_from(["phase", "replicas", "url", "okt"]),
    st.one_of(
        st.integers(0, 5), st.text(max_size=4), st.dictionaries(st.sampled_from(["errorCount"]), st.integers(0, 3))
    ),
    max_size=4,
)


@hypothesis.given(first=extra_fields, second=extra_fields, generation=st.integers(1, 5))
def test_once_a_status_is_written_writing_the_same_again_sends_nothing(
    first: dict[str, Any], second: dict[str, Any], generation: int
) -> None:
    live: dict[str, Any] = {"conditions": [READY_WIRE], "observedGeneration": 1, **first}
    wanted = writer.desired_status(live, loaded(live), generation, second)
    stored = merge(live, writer.status_patch(live, wanted))
    client = RecordingClient()

    again = writer.write(
        client,
        KIND,
        cr(stored, generation),
        writer.desired_status(stored, loaded(stored), generation, second),
        lambda obj: None,
    )

    assert again is None
    assert client.patches == []


# -- where the status goes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "api_version", "expected"),
    [
        (None, "cache.example.com/v1alpha1", writer.Target.STATUS),
        (None, "apps/v1", writer.Target.OFF),
        (None, "v1", writer.Target.OFF),
        (None, "networking.k8s.io/v1", writer.Target.OFF),
        (None, "gateway.networking.k8s.io/v1", writer.Target.OFF),
        (True, "apps/v1", writer.Target.STATUS),
        (False, "cache.example.com/v1", writer.Target.OFF),
        ("annotations", "v1", writer.Target.ANNOTATIONS),
        (writer.Target.STATUS, "v1", writer.Target.STATUS),
    ],
)
def test_the_status_target_defaults_to_off_for_kubernetes_own_kinds(
    declared: Any, api_version: str, expected: writer.Target
) -> None:
    assert writer.Target.resolve(declared, api_version) is expected


def test_an_unknown_status_target_is_refused_with_the_accepted_values() -> None:
    with pytest.raises(ValueError, match="status = 'anotations': expected 'status', 'annotations', 'off'"):
        writer.Target.resolve("anotations", "v1")


def test_the_annotations_target_patches_only_what_differs_and_reads_back_what_it_wrote() -> None:
    conds = conditions.Conditions(now=lambda: T0)
    conds.set("Ready", True, "Reconciled", "", 2)
    first = writer.annotations_patch({}, conds, 2, {"phase": "Running"}, "okt.io")

    assert set(first) == {"okt.io/conditions", "okt.io/observed-generation", "okt.io/status"}
    live = {key: value for key, value in first.items() if value is not None}
    assert writer.annotations_patch(live, conds, 2, {"phase": "Running"}, "okt.io") == {}
    assert writer.conditions_from_annotations(live, "okt.io") == [READY_WIRE]
    assert writer.annotations_patch(live, conds, 3, {}, "okt.io") == {
        "okt.io/observed-generation": "3",
        "okt.io/status": None,
    }


def test_a_status_field_set_to_none_is_left_out_of_the_annotations_target() -> None:
    """None removes a field, as on the status subresource: never written as null, nor the annotation for it alone."""
    conds = conditions.Conditions(now=lambda: T0)
    written = writer.annotations_patch({}, conds, 2, {"phase": "Running", "probe": {"up": True}}, "okt.io")
    live = {key: value for key, value in written.items() if value is not None}

    assert writer.annotations_patch(live, conds, 2, {"phase": "Running", "probe": None}, "okt.io") == {
        "okt.io/status": '{"phase":"Running"}'
    }
    assert writer.annotations_patch(live, conds, 2, {"phase": None, "probe": None}, "okt.io") == {"okt.io/status": None}
    assert "okt.io/status" not in writer.annotations_patch({}, conds, 2, {"probe": None}, "okt.io")


@pytest.mark.parametrize(
    "message",
    [
        pytest.param("timeout; " * 3600, id="ascii"),
        pytest.param("ошибка " * 2600, id="two-byte"),
        pytest.param('{"a":"b"}' * 3600, id="escaped quotes"),
    ],
)
def test_conditions_that_would_overflow_the_annotations_have_their_messages_cut_to_fit(message: str) -> None:
    conds = conditions.Conditions(now=lambda: T0)
    conds.set("Ready", False, "Unreachable", message, 2)
    conds.set("Degraded", True, "Unreachable", message, 2)
    conds.set("Progressing", False, "Settled", "nothing to roll out", 2)
    live = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 200_000}
    bookkeeping = {"okt.io/error-count": "10"}

    patch = writer.annotations_patch(live, conds, 2, {}, "okt.io", alongside=bookkeeping)

    written = {**live, **bookkeeping, **{k: v for k, v in patch.items() if v is not None}}
    assert sum(len(k.encode()) + len(v.encode()) for k, v in written.items()) <= writer.ANNOTATIONS_MAX_BYTES
    stored = {c["type"]: c for c in writer.conditions_from_annotations(written, "okt.io")}
    assert stored["Ready"]["message"].endswith(conditions.TRUNCATION_MARK)
    assert message.startswith(stored["Ready"]["message"][:-1])
    assert stored["Progressing"]["message"] == "nothing to roll out"  # a short message is kept whole
    assert writer.annotations_patch(written, conds, 2, {}, "okt.io", alongside=bookkeeping) == {}


@pytest.mark.parametrize("raw", ["", "not json", '{"a": 1}', "[1"])
def test_an_unreadable_conditions_annotation_reads_as_no_conditions(raw: str) -> None:
    assert writer.conditions_from_annotations({"okt.io/conditions": raw}, "okt.io") == []


@pytest.mark.parametrize(
    ("annotations", "read"),
    [
        pytest.param({"old.example.com/conditions": json.dumps([READY_WIRE])}, [READY_WIRE], id="legacy"),
        pytest.param(
            {"okt.io/conditions": "[]", "old.example.com/conditions": json.dumps([READY_WIRE])}, [], id="current"
        ),
    ],
)
def test_conditions_under_a_legacy_prefix_are_read_where_the_current_prefix_keeps_none(
    annotations: dict[str, str], read: list[Any]
) -> None:
    assert writer.conditions_from_annotations(annotations, "okt.io", ("old.example.com",)) == read
    assert writer.conditions_from_annotations({"old.example.com/conditions": "[]"}, "okt.io") == []


@pytest.mark.parametrize(
    ("annotations", "read"),
    [
        pytest.param({"old.example.com/status": '{"lastBackup":"t1"}'}, {"lastBackup": "t1"}, id="legacy"),
        pytest.param({"okt.io/status": "{}", "old.example.com/status": '{"lastBackup":"t1"}'}, {}, id="current"),
    ],
)
def test_status_fields_under_a_legacy_prefix_are_read_where_the_current_prefix_keeps_none(
    annotations: dict[str, str], read: dict[str, Any]
) -> None:
    """As the conditions are: a prefix changed, the fields an earlier version kept go on (its next write removes the
    legacy annotation, and carries them into the one it writes)."""
    assert writer.status_fields_from_annotations(annotations, "okt.io", ("old.example.com",)) == read
    assert writer.status_fields_from_annotations({"old.example.com/status": '{"a":1}'}, "okt.io") == {}


# -- the status by apply -----------------------------------------------------------------------------------------

MANAGED = [
    {
        "manager": "okt",
        "operation": "Apply",
        "fieldsV1": {
            "f:status": {
                "f:observedGeneration": {},
                "f:okt": {"f:errorCount": {}},
                "f:conditions": {".": {}, 'k:{"type":"Ready"}': {".": {}, "f:status": {}}},
            }
        },
    },
    {
        "manager": "backup",
        "operation": "Apply",
        "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"example.com/BackedUp"}': {".": {}}}}},
    },
    {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {"f:size": {}}}},
]


def test_status_ownership_reads_the_fields_and_condition_types_of_one_manager() -> None:
    owned = writer.status_ownership({"metadata": {"managedFields": MANAGED}}, "okt")

    assert owned == writer.StatusOwnership(
        frozenset({"observedGeneration", "okt", "conditions"}), frozenset({"Ready"}), True
    )
    assert writer.status_ownership({"metadata": {"managedFields": MANAGED}}, "backup").conditions == {
        "example.com/BackedUp"
    }


def test_an_atomic_conditions_list_is_recognised() -> None:
    atomic = [{"manager": "other", "operation": "Update", "fieldsV1": {"f:status": {"f:conditions": {}}}}]

    assert writer.status_ownership({"metadata": {"managedFields": atomic}}, "okt").conditions_by_key is False
    assert writer.status_ownership({"metadata": {}}, "okt").conditions_by_key is None


def test_the_compact_managed_fields_keep_what_status_ownership_reads_and_nothing_else() -> None:
    compact = writer.compact_managed_fields(MANAGED)

    assert [entry["manager"] for entry in compact] == ["okt", "backup"]
    assert compact[0]["fieldsV1"]["f:status"]["f:okt"] == {}
    assert writer.status_ownership({"metadata": {"managedFields": compact}}, "okt") == writer.status_ownership(
        {"metadata": {"managedFields": MANAGED}}, "okt"
    )


def gauge(conditions: list[dict[str, Any]], managed: list[dict[str, Any]]) -> objects.CustomResource:
    return objects.CustomResource(
        {
            "apiVersion": "test.okt.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "generation": 3, "managedFields": managed},
            "status": {"conditions": conditions, "observedGeneration": 2},
        }
    )


def test_the_apply_body_states_okts_conditions_only_and_keeps_the_fields_it_owns() -> None:
    foreign = {
        "type": "example.com/BackedUp",
        "status": "True",
        "reason": "Snap",
        "message": "",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    cr = gauge([READY_WIRE, foreign], MANAGED)
    conds = conditions.Conditions.from_status(cr.status, now=lambda: T0)
    conds.set("Ready", True, "Reconciled", "", 3)
    wanted = writer.desired_status({**cr.status, "okt": {"errorCount": 0}}, conds, 3, {"phase": "Running"})

    body = writer.apply_body(cr, wanted, conds, {"phase": "Running"}, "okt")

    assert body is not None
    assert [c["type"] for c in body["status"]["conditions"]] == ["Ready"]
    assert body["status"]["observedGeneration"] == 3
    assert body["status"]["phase"] == "Running"
    assert body["status"]["okt"] == {"errorCount": 0}  # owned before, not given now: kept as it is
    assert body["metadata"] == {"name": "w", "namespace": "ns"}


def test_foreign_conditions_in_an_atomic_list_fall_back_to_the_guarded_merge_patch() -> None:
    foreign = {"type": "Other", "status": "True", "reason": "Theirs", "lastTransitionTime": "2026-01-02T03:04:05Z"}
    atomic = [{"manager": "other", "operation": "Update", "fieldsV1": {"f:status": {"f:conditions": {}}}}]
    cr = gauge([foreign], atomic)
    conds = conditions.Conditions.from_status(cr.status, now=lambda: T0)
    conds.set("Ready", True, "Reconciled", "", 3)

    assert writer.apply_body(cr, writer.desired_status(cr.status, conds, 3), conds, (), "okt") is None


# --- Residues -------------------------------------------------------------------------------------------------------

WANTED = {"endpoints": {"primary": "a"}, "observedGeneration": 2}
ANSWER = {"status": {"endpoints": {"primary": "a", "secondary": "b"}, "observedGeneration": 2}}


def test_what_an_apply_left_of_another_writer_is_explained_for_the_same_wanted_status() -> None:
    residues = writer.Residues()
    residues.remember("uid-1", WANTED, ANSWER)

    assert residues.explain("uid-1", WANTED, ANSWER["status"])
    assert residues.explain("uid-1", WANTED, {**ANSWER["status"], "endpoints": {"primary": "a", "secondary": "c"}})


@pytest.mark.parametrize(
    ("uid", "wanted", "live"),
    [
        pytest.param("uid-2", WANTED, ANSWER["status"], id="another-object"),
        pytest.param("uid-1", {**WANTED, "observedGeneration": 3}, ANSWER["status"], id="another-wanted-status"),
        pytest.param(
            "uid-1",
            WANTED,
            {**ANSWER["status"], "endpoints": {"primary": "x", "secondary": "b"}},
            id="okts-value-edited",
        ),
        pytest.param("uid-1", {**WANTED, "endpoints": {}}, ANSWER["status"], id="okts-key-removed"),
    ],
)
def test_any_other_difference_is_not_explained(uid: str, wanted: dict[str, Any], live: dict[str, Any]) -> None:
    residues = writer.Residues()
    residues.remember("uid-1", WANTED, ANSWER)

    assert not residues.explain(uid, wanted, live)


def test_an_apply_that_left_nothing_forgets_the_earlier_residue() -> None:
    residues = writer.Residues()
    residues.remember("uid-1", WANTED, ANSWER)
    residues.remember("uid-1", WANTED, {"status": WANTED})

    assert not residues.explain("uid-1", WANTED, ANSWER["status"])


def test_residues_keep_only_the_newest_objects() -> None:
    residues = writer.Residues(limit=2)
    for uid in ("a", "b", "c"):
        residues.remember(uid, WANTED, ANSWER)

    assert [residues.explain(uid, WANTED, ANSWER["status"]) for uid in ("a", "b", "c")] == [False, True, True]


PRUNED_READY = {k: v for k, v in READY_WIRE.items() if k != "observedGeneration"}
AVAILABLE_WIRE = {**READY_WIRE, "type": "Available"}
PRUNED_AVAILABLE = {**PRUNED_READY, "type": "Available"}


@pytest.mark.parametrize(
    ("wanted", "explained"),
    [
        pytest.param([READY_WIRE, PRUNED_AVAILABLE], True, id="a-condition-carried-as-stored"),
        pytest.param([READY_WIRE, AVAILABLE_WIRE], True, id="the-same-as-sent"),
        pytest.param([{**READY_WIRE, "status": "False"}, PRUNED_AVAILABLE], False, id="a-condition-changed"),
        pytest.param([READY_WIRE], False, id="a-condition-removed"),
    ],
)
def test_a_status_that_says_what_the_last_write_sent_or_what_the_server_kept_of_it_is_explained(
    wanted: list[dict[str, Any]], explained: bool
) -> None:
    """A schema without a condition's observedGeneration prunes it from each condition okt sets: a later reconcile
    that sets Ready again but carries Available as stored (it does not set it) wants what the server made of that
    write already, and writing it would change nothing."""
    residues = writer.Residues()
    sent = {"conditions": [READY_WIRE, AVAILABLE_WIRE], "observedGeneration": 2}
    stored = {"conditions": [PRUNED_READY, PRUNED_AVAILABLE], "observedGeneration": 2}
    residues.remember("uid-1", sent, {"status": stored})
    again = {"conditions": wanted, "observedGeneration": 2}

    assert residues.explain("uid-1", again, stored) is explained
    assert residues.sent_as_stored("uid-1", stored, READY_WIRE)


def test_an_edit_of_okts_condition_is_not_explained_though_the_difference_is_the_one_the_write_left() -> None:
    """The conditions list is compared whole: with each condition's observedGeneration pruned, the difference after
    another writer edited okt's Ready is the same as right after okt's write."""
    residues = writer.Residues()
    sent = {"conditions": [READY_WIRE], "observedGeneration": 2}
    stored = {"conditions": [PRUNED_READY], "observedGeneration": 2}
    residues.remember("uid-1", sent, {"status": stored})
    edited = {**stored, "conditions": [{**PRUNED_READY, "message": "edited by hand"}]}
    assert writer.status_patch(edited, sent) == writer.status_patch(stored, sent)

    assert not residues.explain("uid-1", sent, edited)


def test_a_condition_carried_as_stored_is_not_explained_once_someone_else_changed_the_status() -> None:
    residues = writer.Residues()
    sent = {"conditions": [READY_WIRE, AVAILABLE_WIRE], "observedGeneration": 2}
    residues.remember(
        "uid-1", sent, {"status": {"conditions": [PRUNED_READY, PRUNED_AVAILABLE], "observedGeneration": 2}}
    )
    edited = {"conditions": [PRUNED_READY, {**PRUNED_AVAILABLE, "status": "False"}], "observedGeneration": 2}
    again = {"conditions": [READY_WIRE, edited["conditions"][1]], "observedGeneration": 2}

    assert not residues.explain("uid-1", again, edited)
    assert not residues.sent_as_stored("uid-1", edited, READY_WIRE)


# --- the status apply's precondition --------------------------------------------------------------------------------


def _stored_widget(fake: testing.FakeClient) -> objects.CustomResource:
    fake.put({"apiVersion": KIND.api_version, "kind": KIND.kind, "metadata": {"name": "demo", "namespace": "ns"}})
    return objects.CustomResource(fake.get(KIND, "demo", "ns"))


def _apply_ready(
    fake: testing.FakeClient, read: objects.CustomResource, gone: list[Mapping[str, Any] | None]
) -> dict[str, Any] | None:
    conds = conditions.Conditions.from_status(read.status, now=lambda: T0)
    conds.set("Ready", True, "Reconciled", "", read.generation)
    wanted = writer.desired_status(read.status, conds, read.generation)

    def replaced_by(now: Mapping[str, Any] | None) -> bool:
        if now is None or now["metadata"]["uid"] != read.uid:
            gone.append(now)
            return True
        return False

    return writer.write(
        fake, KIND, read, wanted, lambda obj: None, conditions=conds, apply_as="okt", replaced_by=replaced_by
    )


def test_a_status_apply_after_another_write_the_reader_missed_is_sent_again_guarded_by_the_version_read_anew() -> None:
    fake = testing.FakeClient(kinds=[KIND])
    read = _stored_widget(fake)
    fake.patch(KIND, "demo", {"status": {"backups": 1}}, "ns", subresource="status")  # another writer, unseen
    gone: list[Mapping[str, Any] | None] = []
    before = fake.stats.snapshot()

    written = _apply_ready(fake, read, gone)

    assert written is not None and gone == []
    assert fake.stats.delta(before) == {("apply", "widgets/status"): 2, ("get", "widgets"): 1}
    stored = fake.stored(KIND, "demo", "ns")
    assert stored is not None and stored["status"]["backups"] == 1
    assert [c["type"] for c in stored["status"]["conditions"]] == ["Ready"]


def test_a_status_apply_refused_for_an_object_created_again_under_its_name_writes_nothing() -> None:
    fake = testing.FakeClient(kinds=[KIND])
    read = _stored_widget(fake)
    fake.delete(KIND, "demo", "ns")
    fake.put({"apiVersion": KIND.api_version, "kind": KIND.kind, "metadata": {"name": "demo", "namespace": "ns"}})
    gone: list[Mapping[str, Any] | None] = []

    written = _apply_ready(fake, read, gone)

    assert written is None
    assert len(gone) == 1 and gone[0] is not None and gone[0]["metadata"]["uid"] != read.uid
    stored = fake.stored(KIND, "demo", "ns")
    assert stored is not None and "status" not in stored
