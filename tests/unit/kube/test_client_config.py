"""A kubeconfig whose context, cluster or user is not there is refused at start, saying which one and where."""

from __future__ import annotations

import os
import pathlib

import pytest

from okt import errors
from okt.kube import client as kube_client
from okt.runtime import certs

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: x, context: {cluster: c, user: u}}
- {name: lost-cluster, context: {cluster: gone, user: u}}
- {name: lost-user, context: {cluster: c, user: gone}}
"""


@pytest.mark.parametrize(
    ("context", "current", "reason"),
    [
        (None, "", "it sets no current-context: choose one with --context"),
        ("nope", "x", "it has no context 'nope'"),
        (None, "nope", "it has no context 'nope'"),
        ("lost-cluster", "x", "context 'lost-cluster' names the cluster 'gone', which it does not define"),
        ("lost-user", "x", "context 'lost-user' names the user 'gone', which it does not define"),
    ],
)
def test_a_context_that_cannot_be_used_is_refused_with_the_reason(
    tmp_path: pathlib.Path, context: str | None, current: str, reason: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG + (f"current-context: {current}\n" if current else ""))

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig(path, context=context)

    assert str(raised.value) == f"cannot load kubeconfig from {path}: {reason}"


def test_a_context_without_a_user_is_anonymous_as_kubectl_has_it(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG + "- {name: nobody, context: {cluster: c}}\ncurrent-context: nobody\n")

    assert kube_client.Client.from_kubeconfig(path).credential_headers() == {"User-Agent": "okt"}


NOT_A_MAPPING = "not a kubeconfig (a mapping of clusters, users and contexts)"
NO_CONTEXT = "it defines no context: add one (kubectl config set-context)"


@pytest.mark.parametrize(
    ("text", "context", "reason"),
    [
        ("", None, "the file is empty: it holds no kubeconfig"),
        ("# nothing yet\n", "x", "the file is empty: it holds no kubeconfig"),
        ("- a\n- b\n", None, f"it holds a list, {NOT_A_MAPPING}"),
        ("https://127.0.0.1:6443\n", "x", f"it holds a single value, {NOT_A_MAPPING}"),
        ("apiVersion: v1\nkind: Config\n", None, NO_CONTEXT),
        ("apiVersion: v1\nkind: Config\ncontexts: []\n", "x", NO_CONTEXT),
    ],
)
def test_a_file_that_holds_no_kubeconfig_is_refused_saying_so(
    tmp_path: pathlib.Path, text: str, context: str | None, reason: str
) -> None:
    # pykube's words were "argument of type 'NoneType' is not iterable" for an empty file, and a list, a string or a
    # file without contexts were told to choose a context with --context.
    path = tmp_path / "kubeconfig"
    path.write_text(text)

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig(path, context=context)

    assert str(raised.value) == f"cannot load kubeconfig from {path}: {reason}"


def test_a_file_that_is_not_yaml_is_one_line_naming_where_and_never_quoting_it(tmp_path: pathlib.Path) -> None:
    # PyYAML's report quoted the line it stopped at, a token with it, over five lines.
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG + "users:\n- name: u\n  user: {token: s3cr3t-t0ken\n")

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig(path)

    lines = KUBECONFIG.count("\n")
    assert str(raised.value) == (
        f"cannot load kubeconfig from {path}: it is not valid YAML: "
        f"expected ',' or '}}', but got '<stream end>' (line {lines + 4}, column 1)"
    )


def _kubeconfig(path: pathlib.Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_kubeconfig_with_several_files_finds_a_context_the_second_file_defines(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the first file of $KUBECONFIG was read: the context of the second was "it has no context 'b'".
    first = _kubeconfig(tmp_path / "a", KUBECONFIG + "current-context: b\n")
    second = _kubeconfig(
        tmp_path / "b",
        "clusters: [{name: cb, cluster: {server: 'https://127.0.0.2:6443'}}]\n"
        "users: [{name: ub, user: {token: tb}}]\n"
        "contexts: [{name: b, context: {cluster: cb, user: ub, namespace: nb}}]\n",
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second]))

    client = kube_client.Client.from_kubeconfig()

    assert (client.host, client.default_namespace) == ("127.0.0.2:6443", "nb")
    assert client.credential_headers()["Authorization"] == "Bearer tb"


def test_kubeconfig_with_several_files_keeps_the_first_definition_of_a_name_and_the_first_current_context(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _kubeconfig(tmp_path / "a", "users: [{name: u, user: {token: first}}]\n")
    second = _kubeconfig(tmp_path / "b", KUBECONFIG.replace("{token: t}", "{token: second}") + "current-context: x\n")
    third = _kubeconfig(tmp_path / "c", KUBECONFIG + "current-context: lost-user\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second, third]))

    client = kube_client.Client.from_kubeconfig()

    assert (client.host, client.credential_headers()["Authorization"]) == ("127.0.0.1:6443", "Bearer first")


def test_kubeconfig_with_several_files_reads_relative_paths_from_the_folder_of_the_file_that_holds_them(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b" / "certs").mkdir(parents=True)
    (tmp_path / "b" / "certs" / "ca.crt").write_bytes(certs.self_signed().ca_pem)  # loaded when the client is made
    (tmp_path / "b" / "token").write_text("token-of-b\n")
    first = _kubeconfig(tmp_path / "a" / "config", "current-context: b\n")
    second = _kubeconfig(
        tmp_path / "b" / "config",
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443', certificate-authority: certs/ca.crt}}]\n"
        "users: [{name: u, user: {tokenFile: token}}]\n"
        "contexts: [{name: b, context: {cluster: c, user: u}}]\n",
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second]))

    client = kube_client.Client.from_kubeconfig()

    assert client.tls.verify == str(tmp_path / "b" / "certs" / "ca.crt")
    assert client.credential_headers()["Authorization"] == "Bearer token-of-b"


@pytest.mark.parametrize("listed", [["", "missing", "b"], ["b", "b", "missing"]])
def test_kubeconfig_with_several_files_skips_empty_entries_and_files_that_do_not_exist_as_kubectl_does(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, listed: list[str]
) -> None:
    _kubeconfig(tmp_path / "b", KUBECONFIG + "current-context: x\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(tmp_path / name) if name else "" for name in listed))

    assert kube_client.Client.from_kubeconfig().host == "127.0.0.1:6443"


def test_kubeconfig_with_several_files_names_the_file_that_does_not_hold_a_kubeconfig(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _kubeconfig(tmp_path / "a", KUBECONFIG + "current-context: x\n")
    second = _kubeconfig(tmp_path / "b", "- a\n")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([first, second]))

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig()

    assert str(raised.value) == (
        f"cannot load kubeconfig from {first}{os.pathsep}{second}: {second}: it holds a list, {NOT_A_MAPPING}"
    )


def test_kubeconfig_whose_files_all_are_missing_is_refused_naming_them(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    monkeypatch.setenv("KUBECONFIG", listed)

    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig()

    assert str(raised.value) == f"cannot load kubeconfig from {listed}: none of its files exists"


def test_a_context_asked_for_without_a_kubeconfig_is_refused_rather_than_dropped_for_the_in_cluster_identity(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # okt run --context prod in a pod (no kubeconfig) ran as the pod's service account, the context dropped unsaid.
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(errors.ConfigurationError) as raised:
        kube_client.Client.from_kubeconfig(context="prod")
    assert str(raised.value) == (
        "cannot use the context 'prod': no kubeconfig found ($KUBECONFIG unset, no ~/.kube/config), and the "
        "in-cluster service account has no contexts"
    )
