"""The reviews the webhook server answers: which function answers each path, what a body must be to be read as a
review, and what reading one may cost.

Why this exists: the API server's request bodies are the one input of the webhook server nobody but the caller
controls; this module decides, before any reconciler code runs, whether a body is a review okt can answer, and
refuses what would cost more than the largest real review does.

Guarantees:

* AdmissionReview and ConversionReview are answered in the version they came in (``v1``, or ``v1beta1`` from an API
  server configured for it); a review of another version or kind, or a malformed one, is a :class:`BadReview`
  naming what is wrong (a ``400``);
* bodies larger than a review the API server sends are refused unread (:func:`limits_of`: above
  :data:`MAX_ADMISSION_BODY` at an admission path, :data:`MAX_BODY` at a conversion one), and so are bodies of more
  values than their size allows a review (:data:`BYTES_PER_VALUE`), before they are decoded (:class:`TooLarge`, a
  ``413``), so decoding costs about as much memory as the largest real review does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from okt.kube import client as kube_client
from okt.reconciler import admission, admission_request, conversion, webhooks
from okt.reconciler import reconciler as reconciler_mod

MAX_BODY = 16 * 1024 * 1024
"""The largest ConversionReview served: it holds a list of objects (a page of a list, or the whole list the API
server's watch cache serves), which no limit of the API bounds; 16 MiB is some thousands of objects."""
MAX_ADMISSION_BODY = 8 * 1024 * 1024
"""The largest AdmissionReview served: it holds the object (the API server refuses a request body over 3 MiB) and,
for an UPDATE, the old one (etcd stores objects up to 1.5 MiB), with room for the envelope and JSON's escapes."""
BYTES_PER_VALUE = 16
"""A body's ``{``, ``[`` and ``,`` (each a dict, a list or an item decoding creates) may number one per so many bytes
of its limit. The API server's JSON has about one per 12 to 18 bytes (managedFields are the densest), and decoded is
some 10 times its size; a body of small values (``[{},{},...]``) would cost up to 130 bytes of memory each, 30 times
its size and more, so past this count it is refused before it is decoded."""

Review = Callable[[Mapping[str, Any], admission_request.Headers], dict[str, Any]]
"""Answers a review (its decoded body), sent with those HTTP headers (an admission hook's ``admission.headers``)."""


def reviews_of(
    reconcilers: Sequence[type[reconciler_mod.Reconciler]],
    client: kube_client.Client,
    scope: admission.Scope = admission.EVERYTHING,
) -> dict[str, Review]:
    """The review function of every declared webhook, by path (admission judging only the objects of ``scope``)."""
    routes: dict[str, Review] = {}
    for endpoint in webhooks.all_endpoints(reconcilers):
        routes[endpoint.path] = _review(endpoint, endpoint.reconciler(), client, scope)
    return routes


def _review(
    endpoint: webhooks.Endpoint,
    reconciler: reconciler_mod.Reconciler,
    client: kube_client.Client,
    scope: admission.Scope,
) -> Review:
    if endpoint.purpose is webhooks.Purpose.VALIDATING:
        return lambda review, headers: admission.respond(
            review, admission.validate(reconciler, _request(review, *_ADMISSION), client, scope, headers)
        )
    if endpoint.purpose is webhooks.Purpose.MUTATING:
        return lambda review, headers: admission.respond(
            review, admission.mutate(reconciler, _request(review, *_ADMISSION), scope, headers)
        )
    return lambda review, headers: conversion.respond(  # a converter is told of nothing but the objects
        review, conversion.convert(endpoint.reconciler, _request(review, *_CONVERSION))
    )


_ADMISSION = ("AdmissionReview", admission.REVIEW_API_VERSIONS)
_GROUP_VERSION = re.compile(r"[^/\s]+/[^/\s]+")
_CONVERSION = ("ConversionReview", conversion.REVIEW_API_VERSIONS)


class BadReview(ValueError):
    """A request body that is not a review okt can answer (a 400, not a refusal)."""


class TooLarge(ValueError):
    """A request body larger than a review the API server sends (a 413)."""


def weight(raw: bytes) -> int:
    """What decoding ``raw`` costs, as the size of a review that costs as much: its own size, or
    :data:`BYTES_PER_VALUE` for each of its ``{``, ``[`` and ``,`` when that is more.

    The count errs on the side of the memory: a ``,`` inside a string counts too, which only a string of some
    megabytes of commas would notice."""
    values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
    return max(len(raw), values * BYTES_PER_VALUE)


def decode(raw: bytes, limit: int) -> Any:
    """The JSON of ``raw``, a body of at most ``limit`` bytes, or :class:`TooLarge` before decoding when it holds
    more values than a review of that size does (see :data:`BYTES_PER_VALUE`)."""
    if weight(raw) > limit:
        values = raw.count(b"{") + raw.count(b"[") + raw.count(b",")
        most = limit // BYTES_PER_VALUE
        raise TooLarge(f"a review here holds at most {most} values ({{, [ and , of its JSON), this body {values}")
    return json.loads(raw)


def limits_of(reconcilers: Sequence[type[reconciler_mod.Reconciler]]) -> dict[str, int]:
    """The largest body served at each path (by what its review holds: see :data:`MAX_BODY`)."""
    return {
        endpoint.path: MAX_BODY if endpoint.purpose is webhooks.Purpose.CONVERSION else MAX_ADMISSION_BODY
        for endpoint in webhooks.all_endpoints(reconcilers)
    }


def _request(review: Mapping[str, Any], kind: str, api_versions: Sequence[str]) -> Mapping[str, Any]:
    """The review's request, of the shape the review modules read (anything else is a 400 naming what is wrong, not
    a 500 of an AttributeError deep in them).

    The review must be a ``kind`` of one of ``api_versions``: the answer carries the review's apiVersion, and one in
    a version (or of a kind) this webhook does not speak would be answered in a form the caller cannot read.
    """
    if review.get("kind") != kind or review.get("apiVersion") not in api_versions:
        spoken = ", ".join(api_versions)
        raise BadReview(
            f"a {kind} ({spoken}) is served here, not apiVersion {review.get('apiVersion')!r}, "
            f"kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str):
        raise BadReview("the review has no request with a uid")
    # What decides the answer is never guessed: an admission review without its operation would be admitted
    # unjudged, a conversion review without its target answered "Success" with nothing converted.
    if kind == "AdmissionReview" and not isinstance(request.get("operation"), str):
        raise BadReview("request.operation is missing or not a string (CREATE, UPDATE, DELETE or CONNECT)")
    if kind == "ConversionReview" and not _GROUP_VERSION.fullmatch(str(request.get("desiredAPIVersion"))):
        raise BadReview(f"request.desiredAPIVersion {request.get('desiredAPIVersion')!r} is not a group/version")
    for field in ("object", "oldObject", "resource", "kind"):  # kind: what a refusal's details name
        if request.get(field) is not None and not isinstance(request[field], Mapping):
            raise BadReview(f"request.{field} is not a JSON object")
    objects = request.get("objects")
    if objects is not None and not isinstance(objects, list):
        raise BadReview("request.objects is not a list")
    named = [("request.object", request.get("object")), ("request.oldObject", request.get("oldObject"))]
    named += [(f"request.objects[{i}]", obj) for i, obj in enumerate(objects or ())]
    for i, obj in enumerate(objects or ()):
        if not isinstance(obj, Mapping):
            raise BadReview(f"request.objects[{i}] is not a JSON object")
    for field in ("name", "namespace"):
        if request.get(field) is not None and not isinstance(request[field], str):
            raise BadReview(f"request.{field} is not a string")
    for where, obj in named:
        if isinstance(obj, Mapping) and obj.get("metadata") is not None:
            _check_metadata(f"{where}.metadata", obj["metadata"])
    return request


def _check_metadata(where: str, meta: Any) -> None:
    """What of an object's metadata admission reads (its scope, its selection) has the API's types: a 400, not a 500
    of a list where a string was hashed."""
    if not isinstance(meta, Mapping):
        raise BadReview(f"{where} is not a JSON object")
    for field in ("name", "namespace"):
        if meta.get(field) is not None and not isinstance(meta[field], str):
            raise BadReview(f"{where}.{field} is not a string")
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not (isinstance(value, Mapping) and all(isinstance(v, str) for v in value.values())):
            raise BadReview(f"{where}.{field} is not a JSON object of strings")


def verdict(answer: Mapping[str, Any]) -> str:
    """What a review's answer says, for the log: ``allowed``, ``refused``, or a conversion's status."""
    response = answer.get("response") or {}
    if "allowed" in response:
        return "allowed" if response["allowed"] else "refused"
    return str((response.get("result") or {}).get("status", "?"))
