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
