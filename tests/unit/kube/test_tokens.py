"""A token file is read again once its token is a period old, or at once when asked; a bad read keeps the last token."""

from __future__ import annotations

import datetime
import gc
import json
import pathlib
import re
import warnings

import pytest

import okt
from okt.kube import tokens


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def token_file(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "token"
    path.write_text(text)
    return path


def test_the_token_is_read_without_the_whitespace_around_it(tmp_path: pathlib.Path, clock: Clock) -> None:
    source = tokens.TokenFile(token_file(tmp_path, "  first.jwt\n"), clock=clock)

    assert source.token() == "first.jwt"


def test_a_rewritten_file_is_read_again_only_once_the_token_is_a_period_old(
    tmp_path: pathlib.Path, clock: Clock
) -> None:
    path = token_file(tmp_path, "first")
    source = tokens.TokenFile(path, period=60.0, clock=clock)
    path.write_text("second")

    clock.now += 59.0
    before = source.token()
    clock.now += 1.0
    after = source.token()

    assert (before, after) == ("first", "second")


def test_a_renew_reads_at_once_and_says_whether_the_token_changed(tmp_path: pathlib.Path, clock: Clock) -> None:
    path = token_file(tmp_path, "first")
    source = tokens.TokenFile(path, clock=clock)

    unchanged = source.renew()
    path.write_text("second\n")
    changed = source.renew()

    assert (unchanged, changed, source.token()) == (False, True, "second")


@pytest.mark.parametrize(
    "content",
    ["", "  \n", "two words", "tab\tinside", "bell\x07", "caf\u00e9\u2603"],
    ids=["empty", "blank", "space", "tab", "control", "not latin-1"],
)
def test_a_file_without_a_usable_token_keeps_the_last_one_and_says_so_once(
    tmp_path: pathlib.Path, clock: Clock, content: str
) -> None:
    path = token_file(tmp_path, "good")
    source = tokens.TokenFile(path, clock=clock)
    path.write_text(content)

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        changed = [source.renew(), source.renew()]
        clock.now += tokens.PERIOD
        kept = source.token()

    assert changed == [False, False]
    assert kept == "good"
    assert [w.category for w in said] == [tokens.TokenFileWarning]
    assert "good" not in str(said[0].message)


def test_a_missing_file_keeps_the_last_token_and_the_next_good_read_is_taken(
    tmp_path: pathlib.Path, clock: Clock
) -> None:
    path = token_file(tmp_path, "first")
    source = tokens.TokenFile(path, clock=clock)
    path.unlink()

    with pytest.warns(tokens.TokenFileWarning, match="No such file"):
        missing = source.renew()
    path.write_text("second")

    assert (missing, source.renew(), source.token()) == (False, True, "second")


@pytest.mark.parametrize("content", [None, "", "a b"], ids=["no file", "empty", "space"])
def test_a_first_read_that_finds_no_token_is_a_configuration_error(
    tmp_path: pathlib.Path, clock: Clock, content: str | None
) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)

    with pytest.raises(okt.ConfigurationError, match="cannot read a bearer token from"):
        tokens.TokenFile(path, clock=clock)


# -- a credential plugin ---------------------------------------------------------------------------------------------

PLUGIN = """#!/bin/sh
echo run >> "$RUNS"
if [ -s "$FAILS" ]; then cat "$FAILS" >&2; exit 3; fi
printf '%s' "$KUBERNETES_EXEC_INFO" > "$INFO"
printf '{"apiVersion": "%s", "kind": "ExecCredential", "status": {"token": "%s"%s}}' \\
    "${ANSWER_VERSION:-client.authentication.k8s.io/v1beta1}" "$(cat "$TOKEN")" "${EXTRA:-}"
"""
V1BETA1 = "client.authentication.k8s.io/v1beta1"


class Plugin:
    """A credential plugin script in ``folder``: gives the token in ``token``, counts its runs, keeps its input."""

    def __init__(self, folder: pathlib.Path, *, expires: str | None = None, **env: str) -> None:
        self.folder = folder
        self.script = folder / "bin" / "plugin"
        self.script.parent.mkdir()
        self.script.write_text(PLUGIN)
        self.script.chmod(0o755)
        (folder / "token").write_text("first")
        extra = f', "expirationTimestamp": "{expires}"' if expires else ""
        self.env = {
            "RUNS": str(folder / "runs"),
            "INFO": str(folder / "info"),
            "TOKEN": str(folder / "token"),
            "FAILS": str(folder / "fails"),
            "EXTRA": extra,
            **env,
        }

    def spec(self, command: str | None = None, **more: object) -> dict[str, object]:
        env = [{"name": k, "value": v} for k, v in self.env.items()]
        return {"apiVersion": V1BETA1, "command": command or str(self.script), "env": env, **more}

    @property
    def runs(self) -> int:
        path = self.folder / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0

    @property
    def info(self) -> dict[str, object]:
        return dict(json.loads((self.folder / "info").read_text()))


class UtcClock:
    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 11, 28, 12, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        return self.now


def test_a_plugin_runs_once_and_its_token_is_kept_until_just_before_its_expiry(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path, expires="2026-11-28T12:15:00Z")
    clock = UtcClock()
    source = tokens.ExecToken(plugin.spec(), clock=clock)
    (tmp_path / "token").write_text("second")

    kept = [source.token() for _ in range(5)]
    clock.now += datetime.timedelta(minutes=15) - datetime.timedelta(seconds=tokens.EXPIRY_MARGIN)
    renewed = source.token()

    assert kept == ["first"] * 5
    assert renewed == "second"
    assert plugin.runs == 2


def test_a_plugin_without_an_expiry_runs_again_only_when_its_token_is_refused(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path)
    clock = UtcClock()
    source = tokens.ExecToken(plugin.spec(), clock=clock)

    clock.now += datetime.timedelta(days=30)
    same = (source.token(), source.renew())
    (tmp_path / "token").write_text("second")
    changed = source.renew()

    assert same == ("first", False)
    assert (changed, source.token(), plugin.runs) == (True, "second", 3)


def test_the_plugin_gets_its_env_no_terminal_and_the_cluster_when_it_asks(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path)
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    cluster = {"server": "https://example:6443", "certificate-authority": str(tmp_path / "ca.crt")}

    tokens.ExecToken(plugin.spec(provideClusterInfo=True), cluster=cluster)

    assert plugin.info == {
        "apiVersion": V1BETA1,
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {
                "server": "https://example:6443",
                "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
            },
        },
    }


def test_a_relative_command_is_found_from_the_kubeconfig_folder(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path)

    source = tokens.ExecToken(plugin.spec(command="bin/plugin"), kubeconfig=tmp_path / "config")

    assert source.token() == "first"


@pytest.mark.parametrize(
    ("spec", "env", "said"),
    [
        ({"command": "no-such-plugin-anywhere", "installHint": "install it with make"}, {}, "not found (install it"),
        ({"apiVersion": "client.authentication.k8s.io/v2"}, {}, "apiVersion 'client.authentication.k8s.io/v2'"),
        ({"interactiveMode": "Always"}, {}, "needs a terminal"),
        ({}, {"TOKEN": "/nonexistent"}, "gave no usable token"),
        ({}, {"ANSWER_VERSION": "client.authentication.k8s.io/v1"}, "not client.authentication.k8s.io/v1beta1"),
        ({}, {"EXTRA": ', "expirationTimestamp": "soon"'}, "'soon' is not a time"),
        ({}, {"EXTRA": ', "expirationTimestamp": "2030-01-01T00:00:00"'}, "has no time zone"),
    ],
    ids=["not found", "unknown version", "interactive", "no token", "other version", "bad expiry", "naive expiry"],
)
def test_a_plugin_that_gives_no_token_is_one_clear_error(
    tmp_path: pathlib.Path, spec: dict[str, object], env: dict[str, str], said: str
) -> None:
    plugin = Plugin(tmp_path)
    plugin.env.update(env)

    with pytest.raises(okt.ConfigurationError, match=re.escape(said)) as raised:
        tokens.ExecToken({**plugin.spec(), **spec})

    assert "first" not in str(raised.value)


def test_a_plugin_that_fails_at_start_says_why_in_its_own_words_and_the_install_hint(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path)
    (tmp_path / "fails").write_text("the session expired: log in again\n")

    with pytest.raises(okt.ConfigurationError) as raised:
        tokens.ExecToken(plugin.spec(installHint="run: cloud login"))

    assert str(raised.value).endswith("exited with 3: the session expired: log in again (run: cloud login)")


CERTIFICATE_PLUGIN = """#!/bin/sh
echo run >> "$RUNS"
printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", "status": '
printf '{"clientCertificateData": "%s", "clientKeyData": "key of %s"%s}}' \\
    "$(cat "$CERTIFICATE")" "$(cat "$CERTIFICATE")" "${EXTRA:-}"
"""


def certificate_plugin(folder: pathlib.Path, extra: str = "") -> dict[str, object]:
    """A plugin giving the client certificate in ``folder/certificate`` (and its key), counting its runs in
    ``folder/runs``: its spec."""
    script = folder / "certificate-plugin"
    script.write_text(CERTIFICATE_PLUGIN)
    script.chmod(0o755)
    (folder / "certificate").write_text("first")
    env = {"RUNS": str(folder / "runs"), "CERTIFICATE": str(folder / "certificate"), "EXTRA": extra}
    return {"apiVersion": V1BETA1, "command": str(script), "env": [{"name": k, "value": v} for k, v in env.items()]}


def runs(folder: pathlib.Path) -> int:
    return len((folder / "runs").read_text().splitlines())


def given(files: tuple[str, str] | None) -> tuple[str, str]:
    assert files is not None
    return pathlib.Path(files[0]).read_text(), pathlib.Path(files[1]).read_text()


def test_a_plugin_that_gives_a_client_certificate_runs_once_and_its_files_are_kept_until_just_before_its_expiry(
    tmp_path: pathlib.Path,
) -> None:
    clock = UtcClock()
    source = tokens.ExecToken(
        certificate_plugin(tmp_path, ', "expirationTimestamp": "2026-11-28T12:15:00Z"'), clock=clock
    )

    kept = [source.certificate() for _ in range(5)]
    clock.now += datetime.timedelta(minutes=15) - datetime.timedelta(seconds=tokens.EXPIRY_MARGIN)
    same = source.certificate()  # run again, the same certificate: the same files (the connections made are kept)
    (tmp_path / "certificate").write_text("second")
    source.certificate()
    unexpired_runs = runs(tmp_path)
    clock.now += datetime.timedelta(minutes=15)
    renewed = source.certificate()

    assert source.token() is None
    assert len(set(kept)) == 1 and kept[0] is not None
    assert given(kept[0]) == ("first", "key of first")
    assert same == kept[0]
    assert unexpired_runs == 3  # the expiry it gave was passed: it runs each time until it gives a later one
    assert renewed != kept[0] and given(renewed) == ("second", "key of second")
    assert {oct(pathlib.Path(name).stat().st_mode & 0o777) for name in renewed} == {"0o600"}
    assert oct(pathlib.Path(renewed[0]).parent.stat().st_mode & 0o777) == "0o700"


def test_a_plugin_that_gives_a_client_certificate_without_an_expiry_runs_again_only_when_refused(
    tmp_path: pathlib.Path,
) -> None:
    clock = UtcClock()
    source = tokens.ExecToken(certificate_plugin(tmp_path), clock=clock)
    first = source.certificate()

    clock.now += datetime.timedelta(days=30)
    same = (source.certificate(), source.renew())
    (tmp_path / "certificate").write_text("second")
    changed = source.renew()

    assert same == (first, False)
    assert changed is True
    assert given(source.certificate()) == ("second", "key of second")
    assert runs(tmp_path) == 3


def test_the_files_of_a_plugins_certificate_are_removed_with_it(tmp_path: pathlib.Path) -> None:
    source = tokens.ExecToken(certificate_plugin(tmp_path))
    files = source.certificate()
    assert files is not None
    folder = pathlib.Path(files[0]).parent

    del source
    gc.collect()

    assert not folder.exists()


def test_a_plugin_that_gives_a_token_and_a_client_certificate_gives_both(tmp_path: pathlib.Path) -> None:
    source = tokens.ExecToken(certificate_plugin(tmp_path, ', "token": "a-token"'))

    assert (source.token(), given(source.certificate())) == ("a-token", ("first", "key of first"))


def test_a_plugin_that_gives_a_client_certificate_without_its_key_gives_no_credential(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path, EXTRA=', "clientCertificateData": "c"')
    (tmp_path / "token").write_text("")

    with pytest.raises(okt.ConfigurationError, match="clientCertificateData and clientKeyData must both be given"):
        tokens.ExecToken(plugin.spec())


def test_a_plugin_that_fails_later_is_an_unauthorized_answer_and_works_again_once_it_does(
    tmp_path: pathlib.Path,
) -> None:
    plugin = Plugin(tmp_path)
    source = tokens.ExecToken(plugin.spec())
    (tmp_path / "fails").write_text("the SSO session has expired")

    with pytest.raises(okt.Unauthorized, match="the SSO session has expired") as raised:
        source.renew()
    (tmp_path / "fails").unlink()
    (tmp_path / "token").write_text("second")

    assert raised.value.status == 401
    assert (source.renew(), source.token()) == (True, "second")


def test_requests_refused_together_read_the_file_once(tmp_path: pathlib.Path, clock: Clock) -> None:
    path = token_file(tmp_path, "first")
    source = tokens.TokenFile(path, clock=clock)
    path.write_text("second")

    first = source.renew("first")
    path.unlink()  # a second read would warn
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = source.renew("first")

    assert (first, second, source.token()) == (True, True, "second")


def test_requests_refused_together_run_the_plugin_once(tmp_path: pathlib.Path) -> None:
    plugin = Plugin(tmp_path)
    source = tokens.ExecToken(plugin.spec())
    (tmp_path / "token").write_text("second")

    renewed = [source.renew("first") for _ in range(8)]

    assert renewed == [True] * 8
    assert plugin.runs == 2
    assert source.renew("second") is False  # the token in hand refused, and the plugin gives it again
    assert plugin.runs == 3
