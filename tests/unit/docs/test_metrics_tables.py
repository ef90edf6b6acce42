"""The metric tables of the Running guide (docs/guide/running.md, "Observing it") name, type and label exactly the
families a running operator's ``/metrics`` serves: nothing documented is missing, nothing served is left out.

A dashboard or an alert is written from those tables; a family renamed, relabelled or added in
:class:`okt.runtime.metrics.Metrics` without them (or the other way round) is a query that finds nothing, or a series
nobody was told about.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

from prometheus_client import parser

from okt.kube import client as kube_client
from okt.runtime import metrics as metrics_mod

ROOT = pathlib.Path(__file__).resolve().parents[3]
RUNNING = ROOT / "docs" / "guide" / "running.md"

_FAMILY = re.compile(r"^(okt_|controller_runtime_|workqueue_|leader_election_|rest_client_)\w+$")


def documented() -> dict[str, tuple[str, set[str]]]:
    """``{name as queried: (type, label names)}`` from the tables' rows: every backticked name of the first cell, the
    type of the second, the backticked label-like names of the third outside its parentheses (those hold examples)."""
    families: dict[str, tuple[str, set[str]]] = {}
    for line in RUNNING.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 3:
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        if not names or not all(_FAMILY.match(name) for name in names):
            continue
        labels = set(re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", "|".join(cells[2:]))))
        for name in names:
            families[name] = (cells[1], labels)
    return families


class StatsOnly:
    """What the API-requests collector reads from a client: its request counters, and the host it talks to."""

    def __init__(self) -> None:
        self.stats = kube_client.RequestStats()
        self.host = "127.0.0.1:6443"


def exposed() -> dict[str, tuple[str, set[str]]]:
    """``{name as queried: (type, label names)}`` of okt's families on ``/metrics``, each series of one controller,
    one watched kind, one index, one timer, one lease and one webhook's created, as a running operator creates them."""
    metrics = metrics_mod.Metrics()
    metrics.prepare("widget")
    metrics.prepare_watches("widget", ["Gadget.v1"], ["by-owner"])
    metrics.count_timers("widget", ["refresh"])
    metrics.workers("widget", 2)
    metrics.track_queue("widget", lambda: 0)
    metrics.queue_times("widget")
    metrics.track_priorities("widget", lambda: (0, 0))
    metrics.track_sweep_width("widget", lambda: 1)
    metrics.track_mapping("widget", lambda: 0)
    metrics.track_timers("widget", lambda: 0)
    metrics.track_sync("Widget.example.com/v1", lambda: 1, lambda: True, lambda: True)
    metrics.track_leader("widget-operator", lambda: True)
    metrics.reconcile_paths_total.labels(controller="widget", path=">CRChecker>End")
    metrics.prepare_webhooks(["/validate/widget"])
    with metrics.webhook_request("/validate/widget") as answered:
        answered(200, "allowed")
    client: Any = StatsOnly()
    client.stats.record("patch", "widgets/status")
    client.stats.answered(200, "PATCH")
    metrics.watch_client(client)
    families: dict[str, tuple[str, set[str]]] = {}
    for family in parser.text_string_to_metric_families(metrics.exposition().decode()):
        name = family.name + "_total" if family.type == "counter" else family.name
        if _FAMILY.match(name):
            labels = {label for sample in family.samples for label in sample.labels} - {"le"}
            families[name] = (family.type, labels)
    return families


def test_the_tables_are_found() -> None:
    assert documented()["okt_reconcile_total"] == ("counter", {"controller", "result"})
    assert documented()["okt_cache_synced"] == ("gauge", {"kind"})


def test_every_family_the_tables_document_is_served_with_that_type_and_those_labels() -> None:
    served = exposed()
    missing = {name: doc for name, doc in documented().items() if served.get(name) != doc}
    assert not missing, {name: (doc, served.get(name)) for name, doc in missing.items()}


def test_every_family_served_is_in_the_tables() -> None:
    undocumented = {name: kind for name, kind in exposed().items() if name not in documented()}
    assert not undocumented, undocumented


#: What passes a verb to the client's request counters in okt's code: a request's ``verb="..."``, a ``record("...")``.
_VERB_IN_CODE = re.compile(r'\bverb="([a-z-]+)"|\bstats\.record\("([a-z-]+)"')


def verbs_counted() -> set[str]:
    """The ``verb`` values ``okt_api_requests_total`` can take: every verb okt's own requests are counted under
    (okt.testing's helpers left out: they are not the operator's requests)."""
    package = ROOT / "okt"
    found: set[str] = set()
    for source in package.rglob("*.py"):
        if "testing" in source.relative_to(package).parts:
            continue
        found |= {a or b for a, b in _VERB_IN_CODE.findall(source.read_text(encoding="utf-8"))}
    return found


def verbs_documented() -> set[str]:
    """The values the ``okt_api_requests_total`` row lists for ``verb``: the backticked names in the parentheses after
    it."""
    [row] = [line for line in RUNNING.read_text(encoding="utf-8").splitlines() if "`okt_api_requests_total`" in line]
    listed = re.search(r"`verb` \(([^)]*)\)", row)
    assert listed, f"the row does not list the values of verb: {row}"
    return set(re.findall(r"`([a-z-]+)`", listed.group(1)))


def test_the_api_requests_row_lists_every_verb_okt_counts_its_requests_under() -> None:
    """A query for the writes (``verb=~"create|update|patch|delete"``) written from the table must not miss ``apply``,
    okt's most frequent write (server-side apply of every child and status)."""
    counted = verbs_counted()
    assert {"get", "apply", "patch", "connect", "proxy"} <= counted  # the scan finds them
    assert verbs_documented() == counted
