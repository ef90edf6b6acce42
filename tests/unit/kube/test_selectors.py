"""Label selectors matched on the client side as the API server reads them."""

from __future__ import annotations

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
