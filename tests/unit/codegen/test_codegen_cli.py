"""``okt gen``: the click commands, their output, and one-line errors with exit status 2."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import click
import pydantic
import pytest
import yaml
from click.testing import CliRunner, Result

import okt
from okt.codegen import cli, crd, dictionary, rbac, yamlout
from okt.runtime import manager as runtime_manager

MANIFESTS = Path(__file__).parent / "manifests"
GOLDEN = Path(__file__).parent / "golden"
RESOURCE = ["resource", "--type", "ConfigMap", "--kind", "Memcached", "--group", "cache", "--version", "v1alpha1"]


class MemcachedSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)


class Config(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class MemcachedReconciler(okt.Reconciler):
    api_version = "cache.example.com/v1alpha1"
    kind = "Memcached"
    spec_model = MemcachedSpec
    owns: ClassVar = [Config]


class BackupReconciler(okt.Reconciler):
    api_version = "cache.example.com/v1alpha1"
    kind = "Backup"


class CheckedReconciler(okt.Reconciler):
    """A reconciler with a validating webhook (its check)."""

    api_version = "cache.example.com/v1alpha1"
    kind = "Checked"

    def check(self, ctx: okt.Context) -> None:
        return None


def invoke(arguments: list[str], group: click.Group | None = None) -> Result:
    return CliRunner().invoke(group or cli.gen, arguments, catch_exceptions=False)


def fake_loader(*classes: type[Any]) -> cli.ReconcilerLoader:
    def load(target: str) -> list[type[Any]]:
        assert target == "main.py"
        return list(classes)

    return load


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    return tmp_path


def test_resource_writes_both_modules_and_reports_each_file(workdir: Path) -> None:
    result = invoke([*RESOURCE, "manifests/config_map.yaml"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "written  resources/config_map_memcached_gen.py",
        "created  resources/config_map_memcached.py",
        "created  resources/__init__.py",
    ]
    assert (workdir / "resources" / "config_map_memcached_gen.py").read_text() == (
        GOLDEN / "config_map_memcached_gen.py"
    ).read_text()


def test_resource_rerun_reports_the_authors_module_as_kept(workdir: Path) -> None:
    invoke([*RESOURCE, "manifests/config_map.yaml"])
    result = invoke([*RESOURCE, "--out", "resources", "manifests/config_map.yaml"])
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "written  resources/config_map_memcached_gen.py",
        "kept     resources/config_map_memcached.py (yours: not touched)",
    ]


@pytest.mark.parametrize("module", ["config_map_memcached.py", "config_map_memcached_gen.py", "__init__.py"])
def test_a_folder_where_a_module_goes_is_one_line_and_writes_nothing(workdir: Path, module: str) -> None:
    # A folder in the author's module's place was reported "kept" and the wrappers beside it never imported.
    (workdir / "resources" / module).mkdir(parents=True)

    result = invoke([*RESOURCE, "manifests/config_map.yaml"])

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: cannot write {Path('resources', module)}: a folder (or another non-file) is in the way of the module\n"
    )
    assert [path.name for path in (workdir / "resources").iterdir()] == [module]


@pytest.mark.parametrize(
    ("arguments", "given"),
    [
        (["--type", "ConfigMap"], "--type"),
        ([*RESOURCE[1:], "manifests/config_map.yaml"], "MANIFEST, --type, --kind, --group, --version"),
        (["--out", "wrappers", "--crd", "manifests/config_map.yaml"], "--crd, --out"),
    ],
)
def test_list_beside_the_options_of_a_generation_is_one_line(workdir: Path, arguments: list[str], given: str) -> None:
    # --list printed the table and exited 0, generating nothing: a Makefile's target looked done.
    result = invoke(["resource", "--list", *arguments])

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: --list prints the kind dictionary and generates nothing: give {given} without --list\n"
    )
    assert sorted(path.name for path in workdir.iterdir()) == ["manifests"]


def test_list_prints_the_dictionary_as_an_aligned_table(tmp_path: Path) -> None:
    extension = tmp_path / "extra.yaml"
    extension.write_text(
        "kinds:\n  Certificate:\n    apiVersion: cert-manager.io/v1\n    plural: certificates\n"
        "    namespaced: true\n    base: MutableResource\n    hashed: [spec]\n"
    )
    result = invoke(["resource", "--list", "--dictionary", str(extension)])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    header = lines[0]
    assert header.split() == ["KIND", "API", "VERSION", "PLURAL", "SCOPE", "BASE", "HASHED"]
    starts = [header.index(title) for title in ("API VERSION", "PLURAL", "SCOPE", "BASE", "HASHED")]
    kinds = dictionary.load([extension])
    assert [line.split()[0] for line in lines[1:]] == [spec.kind for spec in kinds]
    for line, spec in zip(lines[1:], kinds, strict=True):
        cells = [spec.api_version, spec.plural, "Namespaced" if spec.namespaced else "Cluster", spec.base]
        assert [line[start : start + len(cell)] for start, cell in zip(starts, cells, strict=False)] == cells
    assert "Certificate  " in result.stdout
    assert "ClusterRole  " in result.stdout
    assert lines[1].startswith("Certificate")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            [
                "resource",
                "--type",
                "Deploymnet",
                "--kind",
                "M",
                "--group",
                "g",
                "--version",
                "v1",
                "manifests/pod.yaml",
            ],
            "unknown kind 'Deploymnet' (did you mean: Deployment?)",
            id="unknown-kind",
        ),
        pytest.param(
            [*RESOURCE, "manifests/missing.yaml"],
            "cannot read manifest manifests/missing.yaml: No such file or directory",
            id="unreadable-file",
        ),
        pytest.param(
            [*RESOURCE, "manifests/broken.yaml"],
            "manifest manifests/broken.yaml is not valid YAML: expected the node content, but found '<stream end>' "
            "(line 2, column 1)",
            id="invalid-yaml",
        ),
        pytest.param(
            [*RESOURCE, "manifests/service.yaml"],
            "manifest manifests/service.yaml is a Service, not a ConfigMap: its kind must match --type",
            id="kind-differs-from-type",
        ),
        pytest.param(
            [*RESOURCE, "manifests/two.yaml"],
            "manifest manifests/two.yaml holds 2 YAML documents: expected exactly one object "
            "(generate one wrapper per manifest)",
            id="several-documents",
        ),
        pytest.param(["resource", "--type", "ConfigMap"], "missing options --kind, --group, --version", id="options"),
        pytest.param(RESOURCE, "missing argument MANIFEST (the child's YAML manifest)", id="no-manifest"),
        pytest.param(
            [*RESOURCE, "--dictionary", "nope.yaml", "manifests/config_map.yaml"],
            "cannot read dictionary nope.yaml: No such file or directory",
            id="missing-dictionary",
        ),
        pytest.param(
            ["resource", "--typo", "x"], "No such option '--typo'. Did you mean '--type'?", id="unknown-option"
        ),
        pytest.param(["webhookz"], "No such command", id="unknown-command"),
        pytest.param(["--verbose"], "No such option", id="unknown-group-option"),
        pytest.param(["crd"], "Missing argument 'OPERATOR'.", id="missing-argument"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_status_2(workdir: Path, arguments: list[str], message: str) -> None:
    (workdir / "manifests" / "broken.yaml").write_text("a: [1,\n")
    (workdir / "manifests" / "two.yaml").write_text("kind: ConfigMap\n---\nkind: ConfigMap\n")
    result = invoke(arguments)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: {message}"), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Usage:" not in result.stderr
    assert not (workdir / "resources").exists()


def test_crd_prints_the_crd_of_every_reconciler() -> None:
    result = invoke(["crd", "main.py"], cli.make_gen_group(fake_loader(BackupReconciler, MemcachedReconciler)))
    assert result.exit_code == 0, result.output
    assert list(yaml.safe_load_all(result.stdout)) == [
        crd.crd_for_reconciler(BackupReconciler),
        crd.crd_for_reconciler(MemcachedReconciler),
    ]


def test_crd_for_one_reconciler_written_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "crd.yaml"
    group = cli.make_gen_group(fake_loader(BackupReconciler, MemcachedReconciler))
    result = invoke(["crd", "main.py", "--reconciler", "MemcachedReconciler", "--out", str(out)], group)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert out.read_text() == yamlout.dump_all([crd.crd_for_reconciler(MemcachedReconciler)])


@pytest.mark.parametrize("command", ["crd", "rbac", "webhooks"])
def test_out_dash_is_stdout(workdir: Path, command: str) -> None:
    # A file named "-" was written, and nothing reached a pipe such as `| kubectl apply -f -`.
    group = cli.make_gen_group(fake_loader(CheckedReconciler))
    expected = invoke([command, "main.py"], group)

    result = invoke([command, "main.py", "--out", "-"], group)

    assert result.exit_code == 0, result.output
    assert result.stdout == expected.stdout != ""
    assert not (workdir / "-").exists()


@pytest.mark.parametrize(
    ("command", "wanted"),
    [
        (["crd", "main.py"], "a file, or - for stdout"),
        (["rbac", "main.py"], "a file, or - for stdout"),
        (["webhooks", "main.py"], "a file, or - for stdout"),
        (
            ["deploy", "main.py", "--name", "gizmo", "--namespace", "ops", "--image", "gizmo:1"],
            "a folder (. for this one)",
        ),
        (
            ["bundle", "main.py", "--name", "gizmo", "--version", "0.1.0", "--image", "gizmo:1"],
            "a folder (. for this one)",
        ),
        ([*RESOURCE, "manifests/config_map.yaml"], "a folder (. for this one)"),
    ],
    ids=["crd", "rbac", "webhooks", "deploy", "bundle", "resource"],
)
def test_an_empty_out_is_one_line_and_writes_nothing(workdir: Path, command: list[str], wanted: str) -> None:
    # Path("") is ".": deploy, bundle and resource wrote into the current folder, crd, rbac and webhooks said
    # "cannot write .: Device or resource busy" (an unset variable in a Makefile gives such an --out).
    before = sorted(workdir.rglob("*"))

    result = invoke([*command, "--out", ""], cli.make_gen_group(fake_loader(CheckedReconciler)))

    assert result.exit_code == 2
    assert result.stderr == f"Error: Invalid value for '--out': it is empty: name {wanted}\n"
    assert result.stdout == ""
    assert sorted(workdir.rglob("*")) == before


def test_rbac_passes_its_options_through() -> None:
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    arguments = ["rbac", "main.py", "--namespace", "ops", "--cluster-wide", "--leader-elect"]
    result = invoke([*arguments, "--service-account", "cache-operator"], group)
    assert result.exit_code == 0, result.output
    assert list(yaml.safe_load_all(result.stdout)) == rbac.rbac_for_reconciler(
        MemcachedReconciler,
        namespace="ops",
        cluster_wide=True,
        leader_elect=True,
        service_account="cache-operator",
        metrics_auth=True,
        lease_name="okt-memcached",
    )


def test_rbac_without_a_lease_name_grants_the_lease_okt_run_derives_from_the_same_reconcilers_alone() -> None:
    """``okt run`` on the same operator, told no ``--lease-name``, leads on the name it derives from its reconcilers'
    controller names (the same function): that Lease alone is granted. It was every Lease of the namespace."""
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    result = invoke(["rbac", "main.py", "--leader-elect"], group)
    assert result.exit_code == 0, result.output
    (role,) = [document for document in yaml.safe_load_all(result.stdout) if document["kind"] == "Role"]
    leases = [rule for rule in role["rules"] if rule["resources"] == ["leases"]]
    derived = runtime_manager.default_lease_name([MemcachedReconciler.controller_name()])
    assert [(rule.get("resourceNames"), rule["verbs"]) for rule in leases] == [
        (None, ["create"]),
        ([derived], ["get", "update"]),
    ]


def test_rbac_limits_the_lease_rules_to_the_lease_name_it_is_given() -> None:
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    result = invoke(["rbac", "main.py", "--leader-elect", "--lease-name", "okt-memcached"], group)
    assert result.exit_code == 0, result.output
    (role,) = [document for document in yaml.safe_load_all(result.stdout) if document["kind"] == "Role"]
    leases = [rule for rule in role["rules"] if rule["resources"] == ["leases"]]
    assert [(rule.get("resourceNames"), rule["verbs"]) for rule in leases] == [
        (None, ["create"]),
        (["okt-memcached"], ["get", "update"]),
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--lease-name", "okt-memcached"], "--lease-name names the Lease of leader election: give --leader-elect"),
        (["--leader-elect", "--lease-name", "Okt_Memcached"], "invalid lease name 'Okt_Memcached'"),
    ],
)
def test_rbac_refuses_a_lease_name_it_cannot_use_in_one_line(arguments: list[str], message: str) -> None:
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    result = invoke(["rbac", "main.py", *arguments], group)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_the_library_call_writes_by_default_what_okt_gen_rbac_writes_by_default() -> None:
    """From Python, the review rules of /metrics were left out unless asked for: an operator deployed with that RBAC
    answered every scrape 503."""
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    result = invoke(["rbac", "main.py"], group)
    assert result.exit_code == 0, result.output
    written = list(yaml.safe_load_all(result.stdout))
    assert written == rbac.rbac_for_reconcilers([MemcachedReconciler]) == rbac.rbac_for_reconciler(MemcachedReconciler)
    assert "memcached-operator-metrics-auth" in {document["metadata"]["name"] for document in written}


@pytest.mark.parametrize("cluster_wide", [[], ["--cluster-wide"]])
def test_rbac_lets_the_operator_review_the_tokens_of_metrics_scrapers_unless_told_not_to(
    cluster_wide: list[str],
) -> None:
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    arguments = ["rbac", "main.py", "--namespace", "ops", "--service-account", "cache-operator", *cluster_wide]

    granted = list(yaml.safe_load_all(invoke(arguments, group).stdout))
    left_out = list(yaml.safe_load_all(invoke([*arguments, "--no-metrics-auth"], group).stdout))

    # Cluster-scoped reviews: a ClusterRole even for an operator of one namespace.
    role, binding = [doc for doc in granted if doc["metadata"]["name"] == "cache-operator-metrics-auth"]
    assert (role["kind"], binding["kind"]) == ("ClusterRole", "ClusterRoleBinding")
    assert role["rules"] == list(rbac.METRICS_AUTH_RULES)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "cache-operator", "namespace": "ops"}]
    assert left_out == granted[:-2]
    assert "tokenreviews" not in yaml.safe_dump_all(left_out)


def broken_loader(target: str) -> list[type[Any]]:
    raise ZeroDivisionError("division by zero")


def okt_error_loader(target: str) -> list[type[Any]]:
    raise okt.OktError("no such operator file: main.py")


@pytest.mark.parametrize(
    ("loader", "arguments", "message"),
    [
        (broken_loader, ["crd", "main.py"], "cannot load main.py: ZeroDivisionError: division by zero"),
        (okt_error_loader, ["rbac", "main.py"], "no such operator file: main.py"),
        (fake_loader(), ["crd", "main.py"], "main.py defines no reconciler"),
        (
            fake_loader(MemcachedReconciler, BackupReconciler),
            ["crd", "main.py", "--reconciler", "Nope"],
            "main.py has no reconciler named 'Nope' (it has: BackupReconciler, MemcachedReconciler)",
        ),
        (
            fake_loader(MemcachedReconciler),
            ["rbac", "main.py", "--namespace", "Bad_NS"],
            "invalid namespace 'Bad_NS': expected a DNS label (lowercase letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters) such as operators",
        ),
    ],
)
def test_operator_errors_are_one_line_with_exit_status_2(
    loader: cli.ReconcilerLoader, arguments: list[str], message: str
) -> None:
    result = invoke(arguments, cli.make_gen_group(loader))
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


OPERATOR = """
import okt


class Config(okt.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"


class Memcached(okt.Reconciler):
    api_version = "cache.example.com/v1alpha1"
    kind = "Memcached"
    owns = [Config]
"""


def test_crd_and_rbac_load_an_operator_file_with_okts_loader(tmp_path: Path) -> None:
    operator = tmp_path / "memcached_operator.py"
    operator.write_text(textwrap.dedent(OPERATOR))
    crd_result = invoke(["crd", str(operator)])
    rbac_result = invoke(["rbac", str(operator), "--namespace", "ops"])
    assert crd_result.exit_code == 0, crd_result.output
    assert yaml.safe_load(crd_result.stdout)["metadata"]["name"] == "memcacheds.cache.example.com"
    assert rbac_result.exit_code == 0, rbac_result.output
    role = list(yaml.safe_load_all(rbac_result.stdout))[1]
    assert {"apiGroups": ["cache.example.com"], "resources": ["memcacheds/finalizers"], "verbs": ["update"]} in role[
        "rules"
    ]


def test_help_is_available_for_every_command() -> None:
    for command in (["--help"], ["resource", "--help"], ["crd", "-h"], ["rbac", "--help"]):
        result = invoke(command)
        assert result.exit_code == 0
        assert result.stdout.startswith("Usage: ")


@pytest.mark.parametrize(
    ("body", "status"), [("import sys\nsys.exit()\n", "None"), ("raise SystemExit(0)\n", "0")], ids=["bare", "zero"]
)
def test_an_operator_that_exits_while_importing_is_one_line_not_success(tmp_path: Path, body: str, status: str) -> None:
    operator = tmp_path / "script.py"
    operator.write_text(body)
    out = tmp_path / "crd.yaml"

    result = invoke(["crd", str(operator), "--out", str(out)])

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {operator} exited (SystemExit {status}) while importing: "
        "start anything it runs as a script under if __name__ == '__main__':\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        (["rbac", "main.py", "--namespace", "ops", "--namespace", "shop"], "'--namespace'"),
        (["crd", "main.py", "--out", "a.yaml", "--out=b.yaml"], "'--out'"),
        ([*RESOURCE, "--kind", "Backup", "manifests/config_map.yaml"], "'--kind'"),
    ],
)
def test_an_option_of_one_value_given_twice_is_one_line_and_writes_nothing(
    workdir: Path, arguments: list[str], shown: str
) -> None:
    # The last value replaced the first without a word: the RBAC of one namespace for an operator meant for two.
    result = invoke(arguments, cli.make_gen_group(fake_loader(MemcachedReconciler)))
    assert result.exit_code == 2
    assert result.stderr == f"Error: {shown} is given 2 times: it takes one value (the last would replace the others)\n"
    assert result.stdout == ""
    assert not (workdir / "resources").exists()
    assert not (workdir / "a.yaml").exists()
    assert not (workdir / "b.yaml").exists()


def test_a_repeatable_option_may_be_given_again() -> None:
    group = cli.make_gen_group(fake_loader(MemcachedReconciler))
    result = invoke(["webhooks", "main.py", "--watch-namespace", "a", "--watch-namespace", "b"], group)
    assert result.exit_code == 0, result.output


OPERATOR_WITH_A_MODEL = """
import pydantic
import okt


class GizmoSpec(pydantic.BaseModel):
    size: int = pydantic.Field(default=1, ge=1, description="How many gizmos the operator keeps running for it.")


class GizmoReconciler(okt.Reconciler):
    api_version = "toys.example.com/v1alpha1"
    kind = "Gizmo"
    spec_model = GizmoSpec
"""


def _limit_file_size() -> None:
    # A file may grow to 512 bytes: a write beyond fails (EFBIG), as on a full disk, instead of killing the process.
    resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_an_out_file_that_cannot_be_written_whole_is_left_as_it_was(tmp_path: Path) -> None:
    # The file was truncated, then written as far as the disk let it: the CRD of the last run was half lost.
    operator = tmp_path / "gizmo_operator.py"
    operator.write_text(OPERATOR_WITH_A_MODEL)
    out = tmp_path / "crd.yaml"
    out.write_text("# the CRD of the last run\n")
    argv = [sys.executable, "-m", "okt", "gen", "crd", str(operator), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]), "PYTHONDONTWRITEBYTECODE": "1"}

    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, check=False, env=env, preexec_fn=_limit_file_size
    )

    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Error: cannot write {out}: File too large"), done.stderr
    assert out.read_text() == "# the CRD of the last run\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["crd.yaml", "gizmo_operator.py"]
