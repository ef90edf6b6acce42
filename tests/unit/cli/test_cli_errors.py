"""CLI mistakes end in one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import pathlib
import re
import socket

import pytest
from click.testing import CliRunner

from okt.cli import main as cli_main
from okt.engines import graph


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli_main.cli, list(args))
    return result.exit_code, result.output


def test_graph_prints_the_generated_mermaid_diagram() -> None:
    code, out = invoke("graph")
    assert code == 0
    assert out.strip() == graph.mermaid().strip()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("run", "does-not-exist.py"), "no such operator file: does-not-exist.py"),
        (("run",), "give exactly one of TARGET"),
        (("run", "x.py", "-m", "y"), "give exactly one of TARGET"),
        (("run", "-m", "no_such_module_anywhere"), "no module named 'no_such_module_anywhere'"),
        (("run", "x.py", "--webhook-cert-dir", "d", "--webhook-secret", "ns/s"), "exclude each other"),
        (("run", "x.py", "--webhook-secret", "just-a-name"), "--webhook-secret is NAMESPACE/NAME"),
    ],
)
def test_run_mistakes_are_one_line(args: tuple[str, ...], expected: str) -> None:
    code, out = invoke(*args)
    assert code != 0
    assert expected in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--bogus",), "No such option '--bogus'."),
        (("bogus",), "No such command 'bogus'."),
        (("run", "main.py", "--verbos"), "No such option '--verbos'. Did you mean '--verbose'?"),
        (("run",), "give exactly one of TARGET (a file) or -m MODULE"),
        (("init",), "Missing argument 'NAME'."),
        (("init", "my-operator", "--bogus"), "No such option '--bogus'."),
        (("create", "bogus"), "No such command 'bogus'."),
        (("create", "api"), "Missing option '--kind'."),
        (("envtest", "bogus"), "No such command 'bogus'."),
        (("envtest", "start", "--bogus"), "No such option '--bogus'."),
        (("graph", "main.py", "extra"), "Got unexpected extra argument (extra)"),
    ],
)
def test_a_usage_mistake_of_any_command_is_one_line_with_exit_status_2(args: tuple[str, ...], expected: str) -> None:
    # okt gen's commands said it in one line; the others printed their usage and a --help hint above it.
    code, out = invoke(*args)
    assert code == 2
    assert out == f"Error: {expected}\n"


@pytest.mark.parametrize("args", [(), ("create",), ("envtest",)])
def test_a_group_run_bare_shows_its_help(args: tuple[str, ...]) -> None:
    code, out = invoke(*args)
    assert code == 2
    assert out.startswith("Usage: ") and "Commands:" in out


@pytest.mark.parametrize("name", ["Maps", "maps_one", "-maps", "maps.", "maps\n", "m" * 254])
def test_a_lease_name_the_api_server_refuses_is_a_usage_error(name: str) -> None:
    # The elector would have retried its refused create for ever, the operator never leading.
    code, out = invoke("run", "x.py", "--lease-name", name)
    assert code == 2
    assert f"Invalid value for '--lease-name': {name!r} is not a Lease name" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("secret", ["just-a-name", "ns/", "/name", "ns/a/b", "ns/name/"])
def test_a_webhook_secret_that_is_not_namespace_slash_name_is_a_usage_error(secret: str) -> None:
    # "ns/a/b" passed and failed only once the operator had started, as "Secret ns/a/b does not exist".
    code, out = invoke("run", "x.py", "--webhook-secret", secret)
    assert code == 2
    assert f"--webhook-secret is NAMESPACE/NAME, got {secret!r}" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (("--metrics-bind-address", "0"), "--metrics-bind-address 0 serves no /metrics"),
        (
            ("--metrics-bind-address", ":8080", "--no-metrics-secure"),
            "--no-metrics-secure serves /metrics over plain http",
        ),
        ((), "/metrics on the loopback address 127.0.0.1:8080 is served over plain http"),
    ],
)
def test_a_metrics_certificate_where_metrics_is_not_served_over_https_is_a_usage_error(
    tmp_path: pathlib.Path, options: tuple[str, ...], why: str
) -> None:
    # The folder was taken and never read: --no-metrics-secure --metrics-cert-dir served /metrics over plain http.
    code, out = invoke("run", "x.py", "--metrics-cert-dir", str(tmp_path), *options)
    assert code == 2
    assert out == f"Error: --metrics-cert-dir is the certificate of /metrics over https, and {why}\n"


def test_a_module_without_a_reconciler_is_refused(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "empty_operator.py"
    operator.write_text("VALUE = 1\n")
    code, out = invoke("run", str(operator))
    assert code == 1
    assert "defines no okt.Reconciler subclass" in out


NO_METRICS = ("--metrics-bind-address", "0")
"""These runs stop at their first request: the default metrics port, 8080, may be held by another program here."""


def test_a_bad_kubeconfig_is_one_line(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "one_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("this: [is not a kubeconfig\n")
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), *NO_METRICS)
    assert code == 1
    assert "cannot load kubeconfig" in out
    assert "Traceback" not in out


def test_a_bad_kubeconfig_is_said_before_a_metrics_port_another_program_holds(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "held_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("this: [is not a kubeconfig\n")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, out = invoke(
            "run", str(operator), "--kubeconfig", str(kubeconfig), "--metrics-bind-address", f"127.0.0.1:{port}"
        )
    assert code == 1
    assert out.startswith(f"Error: cannot load kubeconfig from {kubeconfig}")
    assert "Address already in use" not in out


def test_an_unreachable_api_server_is_one_line(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "two_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), *NO_METRICS)
    assert code == 1
    assert "cannot reach the Kubernetes API server" in out


def test_a_credential_plugin_that_fails_is_one_line_with_its_words_and_the_install_hint(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "three_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\necho 'the SSO session has expired' >&2\nexit 1\n")
    plugin.chmod(0o755)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token, "
        "installHint: 'log in with: cloud sso login'}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), *NO_METRICS)
    assert code == 1
    assert "exited with 1: the SSO session has expired (log in with: cloud sso login)" in out
    assert len(out.strip().splitlines()) == 1
    assert "Traceback" not in out


def test_run_warns_once_when_the_file_shadows_a_standard_module(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "operator.py"
    operator.write_text("VALUE = 1\n")
    code, out = invoke("run", str(operator))
    warnings = [line for line in out.splitlines() if "shadows" in line]
    assert warnings == [
        f"okt: warning: {operator} shadows Python's standard module 'operator' wherever its folder is on sys.path "
        "(PYTHONPATH=/app in an image): rename it, e.g. main.py"
    ]
    assert code == 1 and "defines no okt.Reconciler subclass" in out


def test_run_does_not_warn_about_a_file_named_main(tmp_path: pathlib.Path) -> None:
    operator = tmp_path / "main.py"
    operator.write_text("VALUE = 1\n")
    code, out = invoke("run", str(operator))
    assert code == 1 and "shadows" not in out


@pytest.mark.parametrize(("statement", "code"), [("raise SystemExit(3)", 3), ("import sys\nsys.exit()", None)])
def test_an_operator_file_that_exits_while_importing_is_one_line(
    tmp_path: pathlib.Path, statement: str, code: int | None
) -> None:
    # The process ended with the file's own status and not a word: 0 for a bare sys.exit(), the operator not run.
    operator = tmp_path / "exiting_operator.py"
    operator.write_text(f"{statement}\n")
    exit_code, out = invoke("run", str(operator))
    assert exit_code == 1
    assert out.strip() == (
        f"Error: {operator} exited (SystemExit {code}) while importing: "
        "start anything it runs as a script under if __name__ == '__main__':"
    )


@pytest.mark.parametrize(
    ("args", "shown", "value"),
    [
        (("-n", "default", "-n", "Team_A"), "'-n' / '--namespace'", "Team_A"),
        (("--namespace", "team-a."), "'-n' / '--namespace'", "team-a."),
        (("-n", "n" * 64), "'-n' / '--namespace'", "n" * 64),
        (("--lease-namespace", "ops\n"), "'--lease-namespace'", "ops\n"),
    ],
)
def test_a_namespace_the_api_server_refuses_is_a_usage_error(args: tuple[str, ...], shown: str, value: str) -> None:
    # The informers and the elector were refused by the API server and asked again for ever.
    code, out = invoke("run", "x.py", *args)
    assert code == 2
    assert f"Invalid value for {shown}: {value!r} is not a namespace name" in out
    assert "Traceback" not in out


def test_a_reconciler_name_asked_of_a_cluster_that_cannot_be_reached_says_why_not_that_the_name_is_wrong(
    tmp_path: pathlib.Path,
) -> None:
    # "GET /api -> no response (Unavailable)", asked once: the start's retries and its words were skipped.
    operator = tmp_path / "four_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    code, out = invoke("run", str(operator), "--reconciler", "xs.x.io", "--kubeconfig", str(kubeconfig))
    assert code == 1
    assert out.strip().splitlines()[-1].startswith("Error: cannot reach the Kubernetes API server: ")


def test_a_reconciler_name_with_a_kubeconfig_that_does_not_load_says_why_not_that_the_name_is_wrong(
    tmp_path: pathlib.Path,
) -> None:
    # "has no reconciler named 'xs.x.io': cannot load kubeconfig ...": the name blamed for the kubeconfig's fault.
    operator = tmp_path / "five_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncontexts: [{name: x, context: {}}]\n")
    code, out = invoke("run", str(operator), "--reconciler", "xs.x.io", "--kubeconfig", str(kubeconfig))
    assert code == 1
    assert out.strip() == (
        f"Error: cannot load kubeconfig from {kubeconfig}: it sets no current-context: choose one with --context"
    )


def test_a_folder_given_as_the_operator_file_is_named_as_a_folder(tmp_path: pathlib.Path) -> None:
    # "no such operator file": the folder is there, and the line said it was not.
    code, out = invoke("run", str(tmp_path))
    assert code == 1
    assert out.strip() == (
        f"Error: {tmp_path} is a folder, not an operator file: run the .py file in it (main.py, say), or the package "
        "with -m"
    )


def test_an_operator_file_without_the_py_suffix_is_named_as_a_file(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "no module named 'my_operator.txt'": the file is there, and the line spoke of a module.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_operator.txt").write_text("import okt\n")
    code, out = invoke("run", "my_operator.txt")
    assert code == 1
    assert out.strip() == "Error: cannot load my_operator.txt as Python: an operator file's name ends in .py"


@pytest.mark.parametrize("option", [("--lease-name", "shop-operator"), ("--lease-namespace", "operators")])
def test_a_lease_option_without_leader_election_is_a_usage_error(option: tuple[str, str]) -> None:
    # The option was ignored: the operator ran without a Lease, and a second replica reconciled beside the first.
    code, out = invoke("run", "x.py", *option)
    assert code == 2
    assert f"Error: {option[0]} needs --leader-elect (without it no Lease is taken)" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("-l", "app=web", "-l", "tier=front"), "'-l' / '--selector'"),
        (("--selector=app=web", "-ltier=front"), "'-l' / '--selector'"),
        (("--kubeconfig", "one", "--kubeconfig", "two"), "'--kubeconfig'"),
        (("--context", "prod", "--context", "dev"), "'--context'"),
        (("--max-concurrent", "2", "--max-concurrent", "8"), "'--max-concurrent'"),
    ],
)
def test_an_option_of_one_value_given_twice_is_a_usage_error(args: tuple[str, ...], shown: str) -> None:
    # The last value replaced the first without a word: -l app=web -l tier=front served every app's front tier.
    code, out = invoke("run", "x.py", *args)
    assert code == 2
    assert f"Error: {shown} is given 2 times: it takes one value (the last would replace the others)" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    "args", [("-n", "a", "-n", "b"), ("-vv",), ("--leader-elect", "--leader-elect"), ("--namespace=a", "-n", "b")]
)
def test_repeatable_options_and_flags_may_be_given_again(args: tuple[str, ...]) -> None:
    code, out = invoke("run", "does-not-exist.py", *args)
    assert code == 1
    assert "no such operator file: does-not-exist.py" in out


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--webhook-service", "shop-webhooks"),
        ("--webhook-cert-dir", "certs"),
        ("--webhook-secret", "ops/shop-tls"),
        ("--webhook-ca-file", "ca.pem"),
        ("--webhook-port", "9443"),
        ("--webhook-host", "127.0.0.1"),
    ],
)
def test_a_webhook_option_beside_no_webhooks_is_a_usage_error(option: str, value: str) -> None:
    # Taken without a word and unused: no certificate, no CA file for the Makefile that reads it next.
    code, out = invoke("run", "x.py", "--no-webhooks", option, value)
    assert code == 2
    assert f"Error: --no-webhooks and {option} exclude each other" in out


@pytest.mark.parametrize(
    "args", [("--qps", "nan"), ("--qps", "inf"), ("--qps", "1e400"), ("--qps", "nan", "--burst", "5")]
)
def test_a_qps_that_is_no_finite_number_is_a_usage_error(args: tuple[str, ...]) -> None:
    # NaN passes the range check and infinity is above 0: the default burst (2 x qps) was a traceback, and NaN with
    # --burst one from the rate limit.
    code, out = invoke("run", "x.py", *args)
    assert code == 2
    assert out == f"Error: Invalid value for '--qps': a finite number of requests a second > 0, got {float(args[1])}\n"


@pytest.mark.parametrize(
    "args", [("--leader-elect",), ("--webhook-service", "ops-webhooks"), ("--leader-elect", "-n", "shop")]
)
def test_a_pod_namespace_the_api_server_refuses_is_one_line_before_anything_is_loaded(
    args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    # The Lease's namespace when no option names one: the elector asked for a Lease in Bad_NS for ever, never leading.
    monkeypatch.setenv("POD_NAMESPACE", "Bad_NS")
    operator = tmp_path / "never_loaded.py"  # missing: the environment is refused before the file is read

    code, out = invoke("run", str(operator), *args)

    assert code == 2
    assert out == (
        "Error: $POD_NAMESPACE 'Bad_NS' is not a namespace name: lowercase letters, digits and '-', starting and "
        "ending with a letter or digit, at most 63 characters; set it to the pod's namespace (fieldRef "
        "metadata.namespace), or unset it\n"
    )


def test_a_pod_namespace_is_not_read_where_an_option_names_the_lease_namespace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setenv("POD_NAMESPACE", "Bad_NS")

    code, out = invoke("run", str(tmp_path / "missing.py"), "--leader-elect", "--lease-namespace", "ops")

    assert code == 1
    assert out == f"Error: no such operator file: {tmp_path / 'missing.py'}\n"


@pytest.mark.parametrize("args", [("graph", ""), ("graph", "-m", "")])
def test_an_empty_operator_to_graph_is_a_usage_error(args: tuple[str, ...]) -> None:
    # `okt graph $(OPERATOR)` with the variable unset printed the Stepper alone and exited 0.
    code, out = invoke(*args)
    assert code == 2
    assert out == "Error: TARGET or -m MODULE is empty: name the operator file or module, or give neither\n"


_UNREACHABLE_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    "current-context: x\n"
)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--webhook-port", "8443"),
        ("--webhook-host", "127.0.0.1"),
        ("--webhook-cert-dir", "certs"),
        ("--webhook-secret", "ops/shop-tls"),
        ("--webhook-ca-file", "ca.pem"),
        ("--webhook-service", "shop-webhooks"),
    ],
)
def test_a_webhook_option_for_an_operator_without_webhooks_is_a_usage_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, option: str, value: str
) -> None:
    # The option was taken and unused: no webhook served, no Secret made, no CA file written, and not a word said.
    monkeypatch.setenv("POD_NAMESPACE", "ops")
    operator = tmp_path / "plain_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), option, value)
    assert code == 2
    assert out == (
        f"Error: {option}: {operator} declares no webhook (no reconciler with a check, a default, a spec_model or "
        "converters)\n"
    )


def test_webhook_port_0_is_taken_for_an_operator_without_webhooks(tmp_path: pathlib.Path) -> None:
    # What a harness passes to every operator it starts (okt.testing.OperatorProcess): it asks for no port.
    operator = tmp_path / "free_port_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), "--webhook-port", "0", *NO_METRICS)
    assert code == 1
    assert "cannot reach the Kubernetes API server" in out


@pytest.mark.parametrize("listed", [" ", ":", "::", " : "])
def test_a_kubeconfig_variable_naming_no_file_is_one_line_naming_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, listed: str
) -> None:
    # The message named a blank path: "cannot load kubeconfig from  : Configuration file   not found".
    monkeypatch.setenv("KUBECONFIG", listed)
    operator = tmp_path / "listed_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    code, out = invoke("run", str(operator))
    assert code == 1
    assert out == f"Error: cannot load kubeconfig from $KUBECONFIG: it names no file ({listed!r})\n"


@pytest.mark.parametrize("where", ["folder", "no-such-folder/keys.log"])
def test_a_keylog_file_that_cannot_be_written_is_one_line_naming_the_variable(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # Each connection failed to open it, was retried, and the run ended "cannot reach the Kubernetes API server".
    (tmp_path / "folder").mkdir()
    keylog = tmp_path / where
    monkeypatch.setenv("SSLKEYLOGFILE", str(keylog))
    operator = tmp_path / "keylog_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), *NO_METRICS)
    assert code == 1
    assert out.startswith(f"Error: $SSLKEYLOGFILE names {keylog}, where TLS keys cannot be written: ")
    assert out.endswith(" (unset it, or name a file that can be)\n") and out.count("\n") == 1


def test_a_webhook_option_for_a_chosen_reconciler_without_webhooks_names_it(tmp_path: pathlib.Path) -> None:
    # The file has a webhook, but not the reconciler run: none would be served.
    operator = tmp_path / "two_kinds_operator.py"
    operator.write_text(
        "import okt\nclass Plain(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n"
        "class Checked(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'Y'\n"
        "    def check(self, obj, old):\n        return None\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke(
        "run", str(operator), "--reconciler", "Plain", "--kubeconfig", str(kubeconfig), "--webhook-port", "8443"
    )
    assert code == 2
    assert out.startswith(f"Error: --webhook-port: Plain of {operator} declares no webhook (")
    assert out.count("\n") == 1


def test_an_unreachable_api_server_is_one_line_saying_how_often_it_was_tried(tmp_path: pathlib.Path) -> None:
    # Each try's failure was logged as a warning above the line, in its own words again: three lines for one mistake.
    operator = tmp_path / "tried_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), "--log-format", "json", *NO_METRICS)
    assert code == 1
    assert re.fullmatch(
        r"Error: cannot reach the Kubernetes API server: GET /version -> no response \(Unavailable\): "
        r"\[Errno 111\] Connection refused \(tried 3 times in \d+\.\d s\)\n",
        out,
    ), out


@pytest.mark.parametrize(
    ("variable", "proxy", "shown"),
    [
        ("HTTPS_PROXY", "http://user:secret@no-such-host.invalid:3128", "http://no-such-host.invalid:3128"),
        ("https_proxy", "http://no-such-host.invalid", "http://no-such-host.invalid"),
        ("ALL_PROXY", "http://no-such-host.invalid:8080", "http://no-such-host.invalid:8080"),
    ],
)
def test_a_proxy_whose_host_cannot_be_resolved_is_one_line_naming_the_variable_and_the_host(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, variable: str, proxy: str, shown: str
) -> None:
    # "cannot reach the Kubernetes API server: ... Max retries exceeded ... (Caused by ProxyError('Unable to connect to
    # proxy', NameResolutionError(...)))": the server blamed, the variable that chose the proxy named nowhere.
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, proxy)
    operator = tmp_path / "proxied_operator.py"
    operator.write_text("import okt\nclass R(okt.Reconciler):\n    api_version = 'x.io/v1'\n    kind = 'X'\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(_UNREACHABLE_KUBECONFIG)
    code, out = invoke("run", str(operator), "--kubeconfig", str(kubeconfig), "--log-format", "json", *NO_METRICS)
    assert code == 1
    assert out.startswith(
        "Error: cannot reach the Kubernetes API server: GET /version -> no response (Unavailable): cannot reach the "
        f"proxy {shown} that ${variable} names: its host no-such-host.invalid cannot be resolved (tried 3 times in "
    ), out
    assert out.count("\n") == 1 and "secret" not in out
