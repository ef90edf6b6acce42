"""The ClusterOperator's status summed up from the custom resources' statuses (pure: no cluster)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import structlog

import okt
from okt import errors
from okt.kube import kinds
from okt.reconciler import cluster_operator, core
from okt.runtime import cache as cache_mod
from okt.testing import FakeClient

KIND = kinds.Kind("cache.example.com/v1", "Memcached", "memcacheds", namespaced=True)
V1 = [{"name": "operator", "version": "1"}]
V2 = [{"name": "operator", "version": "2"}]


def primary(name: str, versions: list[dict[str, str]] | None = None, **conditions: tuple[str, str]) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [
            {
                "type": t,
                "status": s,
                "reason": r,
                "message": f"{t} of {name}",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
            for t, (s, r) in conditions.items()
        ]
    }
    if versions is not None:
        status["versions"] = versions
    return {"kind": "Memcached", "metadata": {"name": name, "namespace": "ns"}, "status": status}


def summary(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


def test_one_unavailable_and_one_degraded_resource_name_themselves_in_the_summary() -> None:
    primaries = [
        primary("b", Available=("True", "Ok"), Progressing=("False", "Settled"), Degraded=("True", "InvalidSpec")),
        primary("a", Available=("False", "ReplicasUnavailable"), Progressing=("True", "RollingOut")),
    ]

    status, changed = cluster_operator.desired_status(primaries, KIND, None)

    assert changed
    assert summary(status) == {
        "Available": ("False", "ReplicasUnavailable", "Memcached ns/a: Available of a"),
        "Progressing": ("True", "RollingOut", "Memcached ns/a: Progressing of a"),
        "Degraded": ("True", "InvalidSpec", "Memcached ns/b: Degraded of b"),
    }
    assert status["relatedObjects"][:2] == [
        {"group": "cache.example.com", "resource": "memcacheds", "name": "a", "namespace": "ns"},
        {"group": "cache.example.com", "resource": "memcacheds", "name": "b", "namespace": "ns"},
    ]


def test_versions_are_reported_only_when_every_resource_reached_the_same() -> None:
    healthy = {"Available": ("True", "Ok"), "Progressing": ("False", "Settled"), "Degraded": ("False", "Ok")}
    reached, _ = cluster_operator.desired_status([primary("a", V1, **healthy), primary("b", V1, **healthy)], KIND, None)
    midway, _ = cluster_operator.desired_status(
        [primary("a", V2, **healthy), primary("b", V1, **healthy)], KIND, reached
    )
    done, _ = cluster_operator.desired_status([primary("a", V2, **healthy), primary("b", V2, **healthy)], KIND, midway)

    assert (reached["versions"], midway["versions"], done["versions"]) == (V1, V1, V2)


HEALTHY = {"Available": ("True", "Ok"), "Progressing": ("False", "Settled"), "Degraded": ("False", "Ok")}


def test_resources_settled_at_different_versions_are_progressing_and_the_message_names_the_versions() -> None:
    primaries = [primary("a", V2, **HEALTHY), primary("b", V1, **HEALTHY), primary("c", V1, **HEALTHY)]

    status, changed = cluster_operator.desired_status(primaries, KIND, {"versions": V1})

    assert changed and status["versions"] == V1
    assert summary(status)["Progressing"] == (
        "True",
        "VersionsDiffer",
        "Memcached resources report different versions: operator 2 (ns/a); operator 1 (ns/b and 1 more)",
    )


def test_a_resource_rolling_out_itself_names_the_progress_rather_than_the_versions() -> None:
    rolling = {**HEALTHY, "Progressing": ("True", "Upgrading")}
    primaries = [primary("a", V1, **rolling), primary("b", V2, **HEALTHY)]

    status, _ = cluster_operator.desired_status(primaries, KIND, None)

    assert summary(status)["Progressing"] == ("True", "Upgrading", "Memcached ns/a: Progressing of a")


@pytest.mark.parametrize(
    "versions",
    [[V1, V1], [V1, None], [None, None]],
    ids=["same", "one-reports-none", "none-report"],
)
def test_resources_at_one_version_or_reporting_none_are_settled(versions: list[list[dict[str, str]] | None]) -> None:
    primaries = [primary(name, v, **HEALTHY) for name, v in zip("ab", versions, strict=True)]

    status, _ = cluster_operator.desired_status(primaries, KIND, None)

    assert summary(status)["Progressing"] == ("False", "AsExpected", "2 Memcached: settled")


def test_the_versions_named_while_they_differ_are_bounded() -> None:
    many = [primary(f"r{n:02}", [{"name": "operator", "version": str(n)}], **HEALTHY) for n in range(12)]

    status, _ = cluster_operator.desired_status(many, KIND, None)

    message = summary(status)["Progressing"][2]
    assert message.endswith("operator 4 (ns/r04); 7 other sets of versions"), message


@pytest.mark.parametrize(
    "edited",
    [[{"name": "operator"}], [{"name": "operator", "version": 2}], [V1[0], "2"], [{"version": "1"}]],
    ids=["no-version", "not-a-string", "not-an-entry", "no-name"],
)
def test_versions_the_clusteroperator_schema_would_refuse_are_not_reported(edited: list[Any]) -> None:
    healthy = {"Available": ("True", "Ok"), "Progressing": ("False", "Settled"), "Degraded": ("False", "Ok")}
    current = {"versions": V1}

    status, _ = cluster_operator.desired_status([primary("a", edited, **healthy)], KIND, current)

    assert status["versions"] == V1


def test_the_related_objects_of_many_resources_are_bounded_and_named_by_their_namespaces_past_the_bound() -> None:
    children = [
        {"group": "", "resource": "configmaps", "name": "config"},
        {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "name": "shared"},
    ]
    primaries = []
    for index in range(cluster_operator.MAX_RELATED_OBJECTS * 10):
        namespace = f"team-{index % 20}"
        owned = [
            {**entry, "namespace": namespace} if entry["resource"] == "configmaps" else entry for entry in children
        ]
        primaries.append({**primary(f"cache-{index}"), "metadata": {"name": f"cache-{index}", "namespace": namespace}})
        primaries[-1]["status"]["relatedObjects"] = owned

    status, _ = cluster_operator.desired_status(primaries, KIND, None)

    related = status["relatedObjects"]
    assert len(related) <= cluster_operator.MAX_RELATED_OBJECTS
    namespaces = {entry["name"] for entry in related if entry["resource"] == "namespaces"}
    assert namespaces == {f"team-{index}" for index in range(20)}  # where to look: nothing namespaced is lost
    assert {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "name": "shared"} in related
    assert not [entry for entry in related if "namespace" in entry]


def test_the_related_objects_within_the_bound_name_every_object() -> None:
    primaries = [primary(f"cache-{index}") for index in range(cluster_operator.MAX_RELATED_OBJECTS)]

    status, _ = cluster_operator.desired_status(primaries, KIND, None)

    assert [entry["name"] for entry in status["relatedObjects"]] == sorted(p["metadata"]["name"] for p in primaries)


def test_the_same_summary_again_is_no_change_and_keeps_the_transition_times() -> None:
    primaries = [primary("a", V1, Available=("True", "Ok"), Progressing=("False", "S"), Degraded=("False", "Ok"))]
    first, _ = cluster_operator.desired_status(primaries, KIND, None)

    again, changed = cluster_operator.desired_status(primaries, KIND, first)

    assert not changed
    assert again == first


class Things(okt.Reconciler):
    api_version = "example.com/v1"
    kind = "Thing"
    plural = "things"
    cluster_operator = "thing-operator"


def thing(name: str, **status: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "generation": 1}
    return {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": meta, "spec": {}, "status": status}


def test_a_hand_edited_related_object_of_one_resource_neither_fails_the_others_reconcile_nor_stops_the_mirror() -> None:
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")
    client = FakeClient(
        kinds=[thing_kind, cluster_operator.KIND],
        objects=[
            thing("good"),
            thing("odd", relatedObjects=["hand-edited", {"group": "", "resource": "pods", "name": "p"}]),
        ],
    )

    run = okt.reconcile(Things(), client, None, "ns", "good", kind=thing_kind)

    assert run.outcome == okt.Outcome.done()
    stored = client.stored(cluster_operator.KIND, "thing-operator")
    assert stored is not None
    assert [entry["name"] for entry in stored["status"]["relatedObjects"]] == ["good", "odd", "p"]


class TouchyThings(Things):
    def check(self, ctx: okt.Context) -> None:
        if ctx.cr.raw["spec"].get("broken"):
            raise okt.InvalidSpec("broken on purpose", field="spec.broken")


def test_two_resources_recovering_at_once_leave_the_clusteroperator_no_longer_degraded() -> None:
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")
    client = FakeClient(
        kinds=[thing_kind, cluster_operator.KIND],
        objects=[{**thing(name), "spec": {"broken": True}} for name in ("a", "b")],
    )
    for name in ("a", "b"):
        okt.reconcile(TouchyThings(), client, None, "ns", name, kind=thing_kind)
        client.patch(thing_kind, name, {"spec": {"broken": False}}, "ns")

    def b_recovers_first() -> errors.ApiError:
        # b's reconcile runs between a's reading of the resources and a's write of the mirror, which it outdates.
        okt.reconcile(TouchyThings(), client, None, "ns", "b", kind=thing_kind)
        return errors.ApiError.from_status(409, "Conflict", "the object has been modified")

    client.fail("patch", "clusteroperators/status", b_recovers_first)
    okt.reconcile(TouchyThings(), client, None, "ns", "a", kind=thing_kind)

    stored = client.stored(cluster_operator.KIND, "thing-operator")
    assert stored is not None
    assert summary(stored["status"])["Degraded"] == ("False", "AsExpected", "2 Thing: none degraded")


UNKNOWN = {"Available": ("Unknown", "Checking"), "Progressing": ("Unknown", "Checking"), "Degraded": ("Unknown", "X")}


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param(
            UNKNOWN,
            UNKNOWN,
            id="unknown-is-unknown",
        ),
        pytest.param(
            {"Available": ("False", "Down"), "Progressing": ("True", "RollingOut"), "Degraded": ("True", "Broken")},
            {"Available": ("False", "Down"), "Progressing": ("True", "RollingOut"), "Degraded": ("True", "Broken")},
            id="a-known-bad-status-wins-over-unknown",
        ),
        pytest.param(
            {"Available": ("True", "Ok"), "Progressing": ("False", "Settled"), "Degraded": ("False", "Fine")},
            UNKNOWN,
            id="unknown-wins-over-the-expected-status",
        ),
    ],
)
def test_a_resource_whose_condition_is_unknown_makes_the_summary_unknown_unless_another_says_it_is_bad(
    conditions: dict[str, tuple[str, str]], expected: dict[str, tuple[str, str]]
) -> None:
    primaries = [
        primary("a", **UNKNOWN),
        primary("b", **conditions),
    ]

    status, _ = cluster_operator.desired_status(primaries, KIND, None)

    assert {t: (s, r) for t, (s, r, _) in summary(status).items()} == expected


class OneNamespaceReader(core.ApiReader):
    """The reader of an operator serving the namespace ``ns`` only (``okt run -n ns``: its cache holds no other)."""

    namespaces = ("ns",)

    def list(
        self, kind: kinds.Kind, namespace: str | None, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        return super().list(kind, namespace or "ns", labels)


def test_a_mirror_without_a_record_adopts_the_entries_of_its_kind_naming_what_it_sums_up_or_what_is_gone() -> None:
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")

    def entry(name: str, namespace: str = "ns", group: str = "example.com", resource: str = "things") -> dict[str, str]:
        return {"group": group, "resource": resource, "namespace": namespace, "name": name}

    served, gone, out_of_scope = entry("a"), entry("gone"), entry("elsewhere", namespace="other")
    others = [
        entry("gone-config", group="", resource="configmaps"),  # maybe the gone one's child: nothing tells
        {"group": "", "resource": "namespaces", "name": "ns"},  # the CVO's
        {"group": "example.com", "resource": "things", "name": "no-namespace"},  # not the kind's shape
    ]
    earlier = {
        "apiVersion": cluster_operator.API_VERSION,
        "kind": "ClusterOperator",
        "metadata": {"name": "thing-operator"},
        "spec": {},
        "status": {"relatedObjects": [gone, served, out_of_scope, *others]},
    }
    outside = {**thing("elsewhere"), "metadata": {"name": "elsewhere", "namespace": "other", "generation": 1}}
    client = FakeClient(kinds=[thing_kind, cluster_operator.KIND], objects=[thing("a"), outside, earlier])

    okt.reconcile(Things(), client, OneNamespaceReader(client), "ns", "a", kind=thing_kind)

    stored = client.stored(cluster_operator.KIND, "thing-operator")
    assert stored is not None
    assert stored["status"]["relatedObjects"] == [served, out_of_scope, *others]
    assert stored["status"]["extension"][cluster_operator.EXTENSION_KEY] == {
        "owner": {"group": "example.com", "resource": "things", "namespaces": ["ns"]},
        "relatedObjects": [served],
    }


def test_a_mirror_with_a_record_adopts_nothing() -> None:
    listed = {"group": KIND.group, "resource": KIND.plural, "namespace": "ns", "name": "gone"}
    current = {"relatedObjects": [listed], "extension": {cluster_operator.EXTENSION_KEY: {"relatedObjects": []}}}

    assert cluster_operator.adoptable(current, KIND) == []
    assert cluster_operator.adoptable({"relatedObjects": [listed]}, KIND) == [listed]


def test_the_owner_is_the_mirrored_kind_and_the_scope_it_is_reconciled_in() -> None:
    client = FakeClient(kinds=[KIND])

    scoped = cluster_operator.owner(KIND, cache_mod.Cache(client, ["b", "a", "b"], "shard=1"))
    everywhere = cluster_operator.owner(KIND, core.ApiReader(client))

    assert scoped == {
        "group": "cache.example.com",
        "resource": "memcacheds",
        "namespaces": ["a", "b"],
        "labelSelector": "shard=1",
    }
    assert everywhere == {"group": "cache.example.com", "resource": "memcacheds"}
    assert cluster_operator.describe(scoped) == (
        "memcacheds.cache.example.com in namespaces a, b, label selector shard=1"
    )
    assert cluster_operator.describe(everywhere) == "memcacheds.cache.example.com in every namespace"


OWNER = {"group": "cache.example.com", "resource": "memcacheds", "namespaces": ["ns"]}


def test_the_owner_is_recorded_with_the_mirror_and_read_back_as_written() -> None:
    primaries = [primary("a", V1, Available=("True", "Ok"), Progressing=("False", "S"), Degraded=("False", "Ok"))]
    without, _ = cluster_operator.desired_status(primaries, KIND, None)

    status, changed = cluster_operator.desired_status(primaries, KIND, without, owner=OWNER)

    assert changed  # the same summary, an owner recorded: an adoption is written
    assert cluster_operator.recorded_owner(without) is None
    assert cluster_operator.recorded_owner(status) == OWNER
    assert cluster_operator.desired_status(primaries, KIND, status, owner=OWNER) == (status, False)


def test_an_owner_recorded_with_its_selector_spelt_otherwise_is_not_written_again() -> None:
    primaries = [primary("a", V1, Available=("True", "Ok"), Progressing=("False", "S"), Degraded=("False", "Ok"))]
    status, _ = cluster_operator.desired_status(primaries, KIND, None, owner={**OWNER, "labelSelector": "a=1,b=2"})

    _, changed = cluster_operator.desired_status(primaries, KIND, status, owner={**OWNER, "labelSelector": "b=2,a=1"})

    assert not changed  # the same scope: nothing to write, the record keeps the spelling it has
    assert cluster_operator.recorded_owner(status) == {**OWNER, "labelSelector": "a=1,b=2"}


@pytest.mark.parametrize(
    "recorded",
    [
        "someone",
        {"resource": "memcacheds"},
        {"group": "cache.example.com", "resource": ""},
        {"group": "cache.example.com", "resource": "memcacheds", "namespaces": "ns"},
        {"group": "cache.example.com", "resource": "memcacheds", "namespaces": [1]},
        {"group": "cache.example.com", "resource": "memcacheds", "labelSelector": ["a=b"]},
    ],
)
def test_an_owner_record_not_of_the_shape_okt_writes_is_no_owner(recorded: Any) -> None:
    current = {"extension": {cluster_operator.EXTENSION_KEY: {"owner": recorded}}}

    assert cluster_operator.recorded_owner(current) is None


def test_a_clusteroperator_another_scope_owns_is_not_written_and_the_refusal_is_said_once() -> None:
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")
    theirs = {"group": "example.com", "resource": "things", "namespaces": ["other"]}
    owned = {
        "apiVersion": cluster_operator.API_VERSION,
        "kind": "ClusterOperator",
        "metadata": {"name": "thing-operator"},
        "spec": {},
        "status": {"extension": {cluster_operator.EXTENSION_KEY: {"owner": theirs, "relatedObjects": []}}},
    }
    client = FakeClient(kinds=[thing_kind, cluster_operator.KIND], objects=[thing("a"), owned])
    before = client.stored(cluster_operator.KIND, "thing-operator")

    with structlog.testing.capture_logs() as logged:
        runs = [okt.reconcile(Things(), client, OneNamespaceReader(client), "ns", "a", kind=thing_kind) for _ in "abc"]

    assert [run.outcome for run in runs] == [okt.Outcome.done()] * 3
    assert client.stored(cluster_operator.KIND, "thing-operator") == before
    refusals = [entry for entry in logged if "is not mirrored" in entry["event"]]
    assert [(entry["log_level"], entry["owner"], entry["scope"]) for entry in refusals] == [
        ("error", "things.example.com in namespaces other", "things.example.com in namespaces ns")
    ]


def test_an_owner_record_edited_by_hand_is_replaced_whole_when_the_clusteroperator_is_adopted() -> None:
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")
    edited = {"group": "example.com", "resource": "things", "namespaces": ["x"], "labelSelector": 7}
    owned = {
        "apiVersion": cluster_operator.API_VERSION,
        "kind": "ClusterOperator",
        "metadata": {"name": "thing-operator"},
        "spec": {},
        "status": {"extension": {cluster_operator.EXTENSION_KEY: {"owner": edited, "relatedObjects": []}}},
    }
    client = FakeClient(kinds=[thing_kind, cluster_operator.KIND], objects=[thing("a"), owned])

    okt.reconcile(Things(), client, None, "ns", "a", kind=thing_kind)
    adopted = client.stored(cluster_operator.KIND, "thing-operator")
    okt.reconcile(Things(), client, None, "ns", "a", kind=thing_kind)

    assert adopted is not None
    assert cluster_operator.recorded_owner(adopted["status"]) == {"group": "example.com", "resource": "things"}
    assert client.stored(cluster_operator.KIND, "thing-operator") == adopted  # its own now: not written again


class ShardReader(core.ApiReader):
    """The reader of an operator serving the Things of one label selector (``okt run -l``), spelt as given."""

    def __init__(self, client: FakeClient, label_selector: str) -> None:
        super().__init__(client)
        self.label_selector = label_selector


@pytest.mark.parametrize(
    ("selector", "same"),
    [
        ("shard=1,tier in (web,db)", True),
        ("tier in (db, web), shard==1", True),
        ("shard in (1),tier in (db,web),shard=1", True),
        ("shard=2,tier in (web,db)", False),
        ("shard=1", False),
    ],
)
def test_a_clusteroperator_is_its_scope_s_however_the_label_selector_is_spelt(selector: str, same: bool) -> None:
    # The selector was compared as written: a restart given -l b=2,a=1 after -l a=1,b=2 (one scope) was taken for
    # another operator, and the mirror was written no more.
    thing_kind = okt.Kind("example.com/v1", "Thing", "things")
    recorded = {"group": "example.com", "resource": "things", "labelSelector": "shard=1,tier in (web,db)"}
    owned = {
        "apiVersion": cluster_operator.API_VERSION,
        "kind": "ClusterOperator",
        "metadata": {"name": "thing-operator"},
        "spec": {},
        "status": {"extension": {cluster_operator.EXTENSION_KEY: {"owner": recorded, "relatedObjects": []}}},
    }
    client = FakeClient(kinds=[thing_kind, cluster_operator.KIND], objects=[thing("a"), owned])

    with structlog.testing.capture_logs() as logged:
        run = okt.reconcile(Things(), client, ShardReader(client, selector), "ns", "a", kind=thing_kind)

    assert run.outcome == okt.Outcome.done()
    mirror = client.stored(cluster_operator.KIND, "thing-operator")
    assert mirror is not None
    related = [(entry["resource"], entry["name"]) for entry in mirror["status"].get("relatedObjects") or ()]
    refusals = [entry["owner"] for entry in logged if "is not mirrored" in entry["event"]]
    if same:
        assert related == [("things", "a")]
        assert refusals == []
        assert cluster_operator.same_owner(cluster_operator.recorded_owner(mirror["status"]), recorded)
    else:
        assert related == []
        assert refusals == ["things.example.com in every namespace, label selector shard=1,tier in (web,db)"]


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        (OWNER, {**OWNER, "namespaces": ["ns", "ns"]}, True),
        ({**OWNER, "namespaces": ["b", "a"]}, {**OWNER, "namespaces": ["a", "b"]}, True),
        ({**OWNER, "labelSelector": "b=2,a=1"}, {**OWNER, "labelSelector": "a==1, b=2"}, True),
        ({**OWNER, "labelSelector": ""}, OWNER, True),
        ({**OWNER, "labelSelector": "a=1"}, OWNER, False),
        ({**OWNER, "labelSelector": "a in (1"}, {**OWNER, "labelSelector": "a in (1)"}, False),
        (OWNER, {**OWNER, "resource": "others"}, False),
        (OWNER, {**OWNER, "namespaces": ["ns", "other"]}, False),
        (OWNER, None, False),
        (None, None, True),
    ],
)
def test_two_owner_records_are_one_scope_s_when_they_select_the_same(
    one: Mapping[str, Any] | None, other: Mapping[str, Any] | None, same: bool
) -> None:
    assert cluster_operator.same_owner(one, other) is same
    assert cluster_operator.same_owner(other, one) is same
