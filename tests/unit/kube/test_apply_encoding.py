"""The body of a server-side apply is decoded as YAML by the API server: characters beyond the BMP and lone
surrogates must be written so that YAML reads them (JSON's surrogate-pair escapes are refused)."""

from __future__ import annotations

import json

import hypothesis
import yaml
from hypothesis import strategies as st

import okt  # noqa: F401 - the package first: okt.kube.client imports it
from okt.kube.client import yaml_safe_json


def test_an_emoji_is_written_as_yaml_reads_it() -> None:
    assert yaml_safe_json({"m": "hi \U0001f600"}) == '{"m":"hi \\U0001F600"}'


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert yaml.safe_load(yaml_safe_json({"m": "a \udbe3 b"})) == {"m": "a \ufffd b"}


def test_an_escaped_backslash_before_u_is_text_not_an_escape() -> None:
    value = {"m": "\\ud83d\\ude00 and \\\\ud83d"}
    assert yaml.safe_load(yaml_safe_json(value)) == value


def test_a_key_longer_than_yaml_reads_without_a_key_indicator_reads_back_unchanged() -> None:
    # YAML reads a key written as JSON writes it only when its ':' comes within 1024 characters of its start; a
    # custom resource's free-form map may have a longer one (non-ASCII is written six characters a letter).
    value = {"spec": {"k" * 1100: "v", "short": {"ключ " * 250: ["x"]}}, "n": 1}
    assert yaml.safe_load(yaml_safe_json(value)) == value


def test_a_key_of_characters_beyond_the_bmp_longer_than_yaml_reads_reads_back_unchanged() -> None:
    # Each such character is twelve characters of JSON (a surrogate pair), ten once written for YAML: 110 of them
    # are 1,102 characters, past YAML's 1024, though 110 characters at six each would not be.
    value = {"spec": {"\U0001f600" * 110: "v"}}
    assert yaml.safe_load(yaml_safe_json(value)) == value


KEYS = st.text(max_size=20)


@hypothesis.given(st.recursive(st.text(), lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=8))
@hypothesis.settings(max_examples=300, deadline=None)
def test_any_text_without_lone_surrogates_reads_back_unchanged(value: object) -> None:
    body = {"v": value}
    assert yaml.safe_load(yaml_safe_json(body)) == body


def test_a_long_key_of_quotes_and_backslashes_reads_back_unchanged() -> None:
    # JSON escapes each character: no part of the text between two quotes is as long as the key, which is longer than
    # YAML reads without a key indicator all the same.
    value = {"spec": {'"' * 300 + "\\" * 300: "v", "k": 'a"b'}}
    assert yaml.safe_load(yaml_safe_json(value)) == value


def test_a_long_value_beside_short_keys_is_written_as_plain_json() -> None:
    value = {"spec": {"data": "v" * 5000, "n": [1] * 600}}
    assert yaml_safe_json(value) == json.dumps(value, separators=(",", ":"))
