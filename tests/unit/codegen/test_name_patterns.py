"""The patterns that check names and versions match a whole value: a final newline is no part of a valid one.

``$`` also matches just before a string's final newline, so ``re.match(r"^[a-z]+$", "name\\n")`` succeeds: a value
read from a file or a shell's ``$'...'`` would pass the check and be written into a manifest the API server refuses
(or, as a bundle's channel, one no subscription names).
"""

from __future__ import annotations

import re

import pydantic
import pytest

from codegen import crd, deploy, dictionary, rbac, resource, scaffold
from okt.kube import discovery, selectors

PATTERNS: list[tuple[str, re.Pattern[str], str]] = [
    ("crd DNS-1035 label", crd.DNS_1035_LABEL, "memcacheds"),
    ("crd DNS label", crd.DNS_LABEL, "operators"),
    ("crd DNS subdomain", crd.DNS_SUBDOMAIN, "cache.example.com"),
    ("rbac version", rbac._VERSION, "v1alpha1"),
    ("resource kind", resource._CR_KIND, "Memcached"),
    ("resource version", resource._VERSION, "v1"),
    ("deploy semantic version", deploy._SEMVER, "0.1.0"),
    ("deploy image", deploy._IMAGE, "example.com/memcached-operator:0.1.0"),
    ("scaffold project name", scaffold._PROJECT_NAME, "memcached-operator"),
    ("scaffold group", scaffold._GROUP_WITH_DOT, "cache.example.com"),
    ("scaffold version", scaffold._VERSION, "v1beta1"),
    ("scaffold kind", scaffold._KIND, "Memcached"),
    ("discovery version", discovery._VERSION, "v2"),
    ("selector key", selectors._KEY, "app.kubernetes.io/name"),
    ("selector value", selectors._VALUE, "memcached"),
    ("selector integer", selectors._INTEGER, "3"),
]


@pytest.mark.parametrize(("what", "pattern", "valid"), PATTERNS, ids=[what for what, _, _ in PATTERNS])
def test_a_valid_value_followed_by_a_newline_does_not_match(what: str, pattern: re.Pattern[str], valid: str) -> None:
    assert pattern.match(valid), f"{what}: {valid!r} is valid"
    assert pattern.match(valid + "\n") is None
    assert pattern.fullmatch(valid + "\n") is None


@pytest.mark.parametrize("field", ["kind", "hashed"])
def test_a_dictionary_entry_whose_kind_or_hashed_field_ends_in_a_newline_is_refused(field: str) -> None:
    """The dictionary's kind is checked by pydantic, whose ``$`` is the end of the text; its hashed fields by okt."""
    entry = {
        "kind": "Memcached",
        "apiVersion": "cache.example.com/v1",
        "plural": "memcacheds",
        "namespaced": True,
        "base": "MutableResource",
        "hashed": ("spec",),
    }
    entry[field] = "Memcached\n" if field == "kind" else ("spec\n",)
    with pytest.raises(pydantic.ValidationError, match=field):
        dictionary.KindSpec.model_validate(entry)
