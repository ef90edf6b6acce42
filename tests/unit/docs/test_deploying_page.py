"""``docs/guide/deploying.md``: what its RBAC section says ``okt gen rbac`` grants is what the generator grants.

An author who writes the operator's role by hand from that sentence must get a role the start-up check accepts: a
verb left out of it is a permission found missing at the first start.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from okt.codegen import rbac

PAGE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide" / "deploying.md"


def _said_of(subject: str) -> set[str]:
    """The backticked words of the parenthesis that follows ``subject`` in the page's list of the generated rules."""
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    start = text.index("The rules hold no wildcard")
    found = re.search(re.escape(subject) + r"[^(]*\(([^()]*(?:\([^()]*\)[^()]*)*)\)", text[start:])
    assert found, f"the page no longer says what {subject} is granted"
    return set(re.findall(r"`([a-z]+)`", found.group(1)))


@pytest.mark.parametrize(
    ("subject", "granted"),
    [
        ("the custom resource", rbac.PRIMARY_VERBS),
        ("its `status`", rbac.STATUS_VERBS),
        ("its `finalizers`", rbac.FINALIZER_VERBS),
        ("each owned kind", (*rbac.OWNED_VERBS, *rbac.CREATE_DELETE_VERBS)),
    ],
)
def test_the_page_names_every_verb_okt_gen_rbac_grants(subject: str, granted: tuple[str, ...]) -> None:
    assert sorted(set(granted) - _said_of(subject)) == []
