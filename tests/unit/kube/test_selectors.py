"""Label selectors matched on the client side as the API server reads them."""

from __future__ import annotations

import re

import pytest

from okt.kube import selectors


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {"a": "1"}, True),
        ("", {}, True),
        ("a==1,b=2", {"a": "1"}, False),
        ("app=a", {"app": "a"}, True),
        ("app==a", {"app": "b"}, False),
        ("app!=a", {}, True),
        ("app!=a", {"app": "a"}, False),
        ("app in (a, b)", {"app": "b"}, True),
        ("app in (a,b)", {}, False),
        ("app notin (a,b)", {"app": "c"}, True),
        ("app notin (a,b)", {}, True),
        ("app notin (a,b)", {"app": "a"}, False),
        ("app", {"app": ""}, True),
        ("!app", {"app": ""}, False),
        (" app = a , tier in (x) ", {"app": "a", "tier": "x"}, True),
        ("app in (a,b),tier", {"app": "a"}, False),
        ("replicas>3", {"replicas": "5"}, True),
        ("replicas<3", {"replicas": "many"}, False),
    ],
)
def test_a_label_selector_matches_as_the_api_server_does(
    selector: str | None, labels: dict[str, str], matches: bool
) -> None:
    assert selectors.matcher(selector)(labels) is matches


@pytest.mark.parametrize(
    "selector",
    [
        "app:web",
        "app in (a",
        "=x",
        "a!=b,,c",
        "app notin x",
        "app=a b",
        "replicas>many",
        "-app",
        "a,",
        "app=x/y",
        "replicas>-1",
    ],
)
def test_a_label_selector_the_api_server_refuses_is_refused_naming_its_term(selector: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"label selector {selector!r}")):
        selectors.matcher(selector)


@pytest.mark.parametrize(
    ("selector", "labels"),
    [
        ("app=", {"app": ""}),
        ("app==", {"app": ""}),
        ("app in ()", {"app": ""}),
        ("app in (a,)", {"app": "a"}),
        ("example.com/app=web", {"example.com/app": "web"}),
        ("!app", {}),
        ("replicas>3", {"replicas": "4"}),
        ("a.b_c-d=x.y_z-1", {"a.b_c-d": "x.y_z-1"}),
    ],
)
def test_a_label_selector_the_api_server_reads_is_read_as_it_does(selector: str, labels: dict[str, str]) -> None:
    matches = selectors.matcher(selector)
    assert matches(labels)
    assert not matches({"app": "other", "replicas": "2", "example.com/app": "api", "a.b_c-d": "y"})


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, {}),
        ("", {}),
        ("release=one", {"matchExpressions": [{"key": "release", "operator": "In", "values": ["one"]}]}),
        ("release==one", {"matchExpressions": [{"key": "release", "operator": "In", "values": ["one"]}]}),
        (
            "tier in (web, cache),app!=x",
            {
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["cache", "web"]},
                    {"key": "app", "operator": "NotIn", "values": ["x"]},
                ]
            },
        ),
        ("app notin (a,b)", {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a", "b"]}]}),
        (
            "example.com/shard,!paused",
            {
                "matchExpressions": [
                    {"key": "example.com/shard", "operator": "Exists"},
                    {"key": "paused", "operator": "DoesNotExist"},
                ]
            },
        ),
        # no LabelSelector says "greater than": the term is left out, and the rest still narrows
        ("replicas>3,app=a", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]}),
        ("replicas<3", {}),
    ],
)
def test_a_selector_string_becomes_the_label_selector_that_selects_at_least_what_it_selects(
    selector: str | None, expected: dict[str, object]
) -> None:
    assert selectors.label_selector(selector) == expected


def test_a_selector_the_api_server_refuses_has_no_label_selector() -> None:
    with pytest.raises(ValueError, match="'app:web'"):
        selectors.label_selector("app:web")


@pytest.mark.parametrize("selector", ["app in (web", "app notin web", "app in web, api", "!app=web"])
def test_a_term_no_form_reads_is_named_as_such_not_as_a_label_key(selector: str) -> None:
    # "'app in (web' is not a label key": the key blamed for a missing parenthesis or a misspelt operator.
    term = selector.partition(", ")[0]
    with pytest.raises(ValueError) as raised:
        selectors.matcher(selector)
    assert str(raised.value) == (
        f"label selector {selector!r}: {term!r} is not a term the API server reads: write k=v, k!=v, k in (a, b), "
        "k notin (a, b), k, !k, k>n or k<n"
    )


@pytest.mark.parametrize(
    ("selector", "canonical"),
    [
        (None, ""),
        (" ", ""),
        ("a=1,b=2", "a=1,b=2"),
        ("b=2,a=1", "a=1,b=2"),
        (" b = 2 , a==1 ", "a=1,b=2"),
        ("a=1,a==1", "a=1"),
        ("tier in (web, db)", "tier in (db,web)"),
        ("tier in (web),tier notin (db)", "tier!=db,tier=web"),
        ("!canary,app", "app,!canary"),
        ("replicas>3, app!=x", "app!=x,replicas>3"),
        ("app in (a,)", "app in (,a)"),
    ],
)
def test_one_selector_has_one_canonical_spelling_whatever_its_order_and_spacing(
    selector: str | None, canonical: str
) -> None:
    assert selectors.canonical(selector) == canonical
    assert selectors.canonical(canonical) == canonical
    labels = {"a": "1", "b": "2", "tier": "web", "app": "a", "replicas": "5"}
    assert selectors.matcher(canonical)(labels) is selectors.matcher(selector)(labels)


def test_a_selector_the_api_server_refuses_has_no_canonical_spelling() -> None:
    with pytest.raises(ValueError, match=re.escape("label selector 'app in (a'")):
        selectors.canonical("app in (a")
