"""The concept pages say what okt does: the claims a reader acts on, held to the behaviour they describe.

``docs/concepts/stepper.md`` names what makes CRChecker add a finalizer (``finalizer``, not ``cleanup``: a cleanup
alone adds none and is never called); ``docs/concepts/conditions.md``'s ``summary()`` line quotes the reasons a
successful reconcile writes; ``docs/concepts/resources.md``'s write bound names the repair of a re-keyed item, which
takes more than one write (``tests/integration/resources/test_server_side_apply.py`` counts them);
``docs/concepts/results.md``'s table of operations says what a ``MutationError`` of the Mutator or of a template
that does not render and a ``RegistrationError`` end in, as the errors' docstrings (the reference page) do.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import okt
from okt.kube import kinds
from okt.status import conditions
from okt.testing import FakeClient

CONCEPTS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "concepts"
BUCKET = kinds.Kind("storage.example.com/v1", "Bucket", "buckets")


class CleanupOnly(okt.Reconciler):
    api_version = BUCKET.api_version
    kind = BUCKET.kind

    def cleanup(self, ctx: okt.Context) -> None:
        raise AssertionError("a cleanup without a finalizer is never called")


def _bucket(fake: FakeClient) -> dict[str, Any]:
    body = {"apiVersion": BUCKET.api_version, "kind": BUCKET.kind, "metadata": {"name": "b", "namespace": "ns"}}
    fake.create(body, BUCKET)
    okt.reconcile(CleanupOnly(), fake, None, "ns", "b")
    return fake.get(BUCKET, "b", "ns")


def test_the_stepper_page_says_a_finalizer_is_added_for_a_declared_finalizer_not_for_a_cleanup() -> None:
    stored = _bucket(FakeClient(kinds=[BUCKET]))
    assert not stored["metadata"].get("finalizers")
    row = next(line for line in (CONCEPTS / "stepper.md").read_text().splitlines() if line.startswith("| `CRChecker`"))
    assert "declared cleanup" not in row
    assert "declares `finalizer`" in row


def test_the_conditions_pages_summary_quotes_what_a_successful_reconcile_writes() -> None:
    stored = _bucket(FakeClient(kinds=[BUCKET]))
    written = conditions.Conditions.from_status(stored["status"]).summary().split(", ")
    page = (CONCEPTS / "conditions.md").read_text()
    quoted = re.search(r"`summary\(\)` \(one line for logs: `([^`]*)`\)", page)
    assert quoted is not None
    for part in quoted.group(1).split(", "):
        assert part in written, (part, written)


def test_the_resources_pages_write_bound_names_the_repair_of_a_rekeyed_item() -> None:
    page = " ".join((CONCEPTS / "resources.md").read_text().split())
    bound = page.split("**At most one write per child per reconcile**", 1)[1].split("- **", 1)[0]
    assert "re-keyed" in bound
    assert "JSON patch" in bound


class Settings(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"


class RenamedSettings(Settings):
    def mutate_with_cr(self, cr: okt.CustomResource) -> None:
        self.desired["metadata"]["name"] = "renamed"


class Renaming(okt.Reconciler):
    api_version = BUCKET.api_version
    kind = BUCKET.kind
    owns = (RenamedSettings,)


class Unowned(okt.Reconciler):
    api_version = BUCKET.api_version
    kind = BUCKET.kind

    def resources(self, ctx: okt.Context) -> list[okt.Resource]:
        return [Settings(ctx.cr)]  # a ConfigMap, which owns does not name: okt would not watch it


def _operations(reconciler: okt.Reconciler) -> tuple[okt.Outcome, list[tuple[okt.Operation, str]]]:
    fake = FakeClient(kinds=[BUCKET])
    fake.create({"apiVersion": BUCKET.api_version, "kind": BUCKET.kind, "metadata": {"name": "b", "namespace": "ns"}})
    run = okt.reconcile(reconciler, fake, None, "ns", "b")
    return run.outcome, [(entry.operation, type(entry.error).__name__) for entry in run.results.entries]


def _row(operation: okt.Operation) -> str:
    rows = (CONCEPTS / "results.md").read_text().splitlines()
    return next(line for line in rows if line.startswith(f"| `{operation.value}` |"))


def test_the_results_pages_table_says_a_child_renamed_by_its_mutation_is_an_alarming_give_up() -> None:
    outcome, recorded = _operations(Renaming())
    assert outcome.kind is okt.OutcomeKind.GIVE_UP
    assert (okt.Operation.GIVE_UP, "MutationError") in recorded
    assert "alarming give-up" in _row(okt.Operation.MUTATE_ERROR)
    assert "alarming give-up" in (okt.MutationError.__doc__ or "")


class UnrenderableSettings(Settings):
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ cr.spec.missing }}'\n"


class Unrenderable(okt.Reconciler):
    api_version = BUCKET.api_version
    kind = BUCKET.kind
    owns = (UnrenderableSettings,)


def test_a_template_that_does_not_render_gives_up_as_a_child_renamed_does_and_the_pages_say_so() -> None:
    outcome, recorded = _operations(Unrenderable())
    assert outcome.kind is okt.OutcomeKind.GIVE_UP
    assert (okt.Operation.HOOK_ERROR, "MutationError") in recorded
    assert "template that does not render" in _row(okt.Operation.MUTATE_ERROR)
    assert "permanent error" in _row(okt.Operation.MUTATE_ERROR)
    assert "Permanent wherever it is raised" in (okt.MutationError.__doc__ or "")


def test_the_results_pages_table_says_a_child_of_a_kind_not_owned_aborts_the_registration() -> None:
    outcome, recorded = _operations(Unowned())
    assert outcome.kind is okt.OutcomeKind.GIVE_UP  # reported once: the same code would do it again
    assert (okt.Operation.REGISTRATION_ABORTED, "RegistrationError") in recorded
    assert "not in `owns`" in _row(okt.Operation.REGISTRATION_ABORTED)
    assert "``owns``" in (okt.RegistrationError.__doc__ or "")
    assert "not retried until the object changes" in _row(okt.Operation.REGISTRATION_ABORTED)
