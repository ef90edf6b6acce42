"""What an API error says: enough to act on, and never the Secret data the refused request carried."""

from __future__ import annotations

import pytest

import okt
from okt.kube import client as kube_client

pytestmark = pytest.mark.integration


def test_a_secret_refused_for_its_data_is_not_quoted_in_the_error(kube: kube_client.Client, namespace: str) -> None:
    # A common slip: clear text under data (base64 expected) instead of stringData. The API server's JSON decoder
    # quotes the body around where it stopped; the error goes to the log, the Ready condition and an Event.
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "credentials", "namespace": namespace},
        "data": {"password": "hunter2 in clear"},
    }

    with pytest.raises(okt.BadRequest) as raised:
        kube.create(secret)

    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in raised.value.api_message
    assert "cannot be handled as a Secret" in str(raised.value)


@pytest.mark.parametrize("field", ["data", "stringData"])
def test_a_secret_refused_by_apply_for_a_value_of_the_wrong_type_is_not_quoted_in_the_error(
    kube: kube_client.Client, namespace: str, field: str
) -> None:
    # A template that places a number where a Secret wants a string: server-side apply's typed patch names the field
    # and quotes the value it could not take.
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "credentials", "namespace": namespace},
        field: {"pin": 987654},
    }

    with pytest.raises(okt.ApiError) as raised:
        kube.apply(secret, field_manager="okt")

    assert "987654" not in str(raised.value)
    assert "987654" not in raised.value.api_message
    assert f"{field}.pin: expected string" in str(raised.value)
    assert isinstance(raised.value, okt.Invalid)  # a refusal of the body (as a 500), not a failure of the server
    assert [cause.field for cause in raised.value.causes] == [f"{field}.pin"]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("data", "hunter2 {in} clear", "data: expected map"),
        ("stringData", ["hunter2"], "stringData: expected map"),
        ("stringData", "password: hunter2 }\n  .data: expected map, got &{x}", "stringData: expected map"),
        ("metadata", {"name": "credentials", "labels": ["hunter2"]}, "metadata.labels: expected map"),
    ],
    ids=["data-text", "string-data-list", "string-data-unbalanced", "labels-list"],
)
def test_a_secret_refused_by_apply_for_a_field_that_is_no_map_is_not_quoted_in_the_error(
    kube: kube_client.Client, namespace: str, field: str, value: object, said: str
) -> None:
    # A template that places a Secret's text where a mapping goes (stringData: {{ credentials }}): server-side apply's
    # typed patch quotes the whole value as Go prints it (got &{...}), the braces of the value unescaped in it.
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "credentials", "namespace": namespace}}
    secret[field] = {**value, "namespace": namespace} if isinstance(value, dict) else value

    with pytest.raises(okt.ApiError) as raised:
        kube.apply(secret, field_manager="okt")

    assert "hunter2" not in str(raised.value)
    assert "hunter2" not in raised.value.api_message
    assert f"{said}, got a value (left out)" in str(raised.value)
