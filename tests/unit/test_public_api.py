"""The public surface is small and explicit: `okt.__all__` is sorted, complete and pinned."""

from __future__ import annotations

import okt

PINNED = {
    "MapContext",
    "ref_of",
    "watch",
    "every",
    "daemon",
    "DaemonContext",
    "Admission",
    "AdmissionRefused",
    "on_cleanup",
    "on_startup",
    "probe",
    "AVAILABLE",
    "DEGRADED",
    "PROGRESSING",
    "READY",
    "RECONCILIATION_SUCCESS",
    "Manager",
    "BadRequest",
    "ConfigurationError",
    "Forbidden",
    "Gone",
    "Invalid",
    "MutationError",
    "NamespaceTerminating",
    "NotLeader",
    "NotServed",
    "WriteRefused",
    "ObjectTooLarge",
    "ImmutableField",
    "Index",
    "InvalidChild",
    "OwnedByAnother",
    "RegistrationError",
    "RequestTooLarge",
    "ServerError",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
    "ApiError",
    "Client",
    "Condition",
    "ConditionStatus",
    "Conditions",
    "Conflict",
    "Context",
    "CustomResource",
    "DeploymentResource",
    "FreeStyle",
    "GiveUp",
    "InvalidSpec",
    "Kind",
    "MutableResource",
    "NotFound",
    "OktError",
    "Operation",
    "Outcome",
    "OutcomeKind",
    "PermanentError",
    "Persistence",
    "Readiness",
    "Reconciler",
    "Resource",
    "Run",
    "SecretResource",
    "ServiceResource",
    "State",
    "StatefulSetResource",
    "StatusTarget",
    "Stepper",
    "TemporaryError",
    "give_up",
    "reconcile",
    "requeue_after",
    "IllegalTransition",
    "Lifecycle",
    "Move",
    "Progress",
    "Transition",
    "UnknownPhase",
    "ExecResult",
    "HttpError",
    "HttpResponse",
    "RemoteError",
    "RemoteTimeout",
}


def test_all_is_sorted() -> None:
    assert list(okt.__all__) == sorted(okt.__all__)


def test_all_matches_the_pinned_surface() -> None:
    assert set(okt.__all__) == PINNED


def test_every_public_name_resolves() -> None:
    missing = [name for name in okt.__all__ if not hasattr(okt, name)]
    assert missing == []


def test_every_error_class_users_catch_is_exported() -> None:
    from okt import errors

    tree = {
        name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, errors.OktError)
    }
    assert tree <= set(okt.__all__)


def test_what_the_results_page_says_okt_re_exports_is_exported() -> None:
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "concepts" / "results.md"
    claim = re.search(r"re-exported from `okt`: ([^.]*)\.", page.read_text())
    assert claim, "the page no longer says what okt re-exports"
    named = re.findall(r"`(\w+)`", claim.group(1))
    assert named
    assert [name for name in named if name not in okt.__all__] == []
