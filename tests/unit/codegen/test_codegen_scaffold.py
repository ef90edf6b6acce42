"""``okt init`` / ``okt create api``: the files of a new project, checked names, and generators shared with okt gen."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from okt.cli import main as cli_main
from okt.codegen import cli, errors, scaffold
from okt.kube import kinds as kube_kinds
from okt.resources.template_skeleton import KubectlLoader

KUBECTL = "/usr/bin/kubectl"

PROJECT = scaffold.Project.new("my-operator", group="example.com", version="v1alpha1")
WIDGET = scaffold.Api.new("Widget", group="example.com", version="v1alpha1")
GROUP_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 49, "example", "com"])
EXPECTED_FILES = {
    ".gitignore",
    "Dockerfile",
    "Makefile",
    "README.md",
    "config/base/crd.yaml",
    "config/base/kustomization.yaml",
    "config/base/manager.yaml",
    "config/base/metrics.yaml",
    "config/base/rbac.yaml",
    "config/base/webhook.yaml",
    "config/overlays/default/kustomization.yaml",
    "config/overlays/default/namespace.yaml",
    "deploy/crd.yaml",
    "deploy/rbac.yaml",
    "deploy/samples/widget.yaml",
    "main.py",
    "manifests/widget/configmap.yaml",
    "my_operator/__init__.py",
    "my_operator/widget/__init__.py",
    "my_operator/widget/api.py",
    "my_operator/widget/reconciler.py",
    "my_operator/widget/resources/__init__.py",
    "my_operator/widget/resources/config_map_widget.py",
    "my_operator/widget/resources/config_map_widget_gen.py",
    "pyproject.toml",
    "tests/test_widget.py",
}


def files(directory: Path) -> set[str]:
    return {path.relative_to(directory).as_posix() for path in directory.rglob("*") if path.is_file()}


def documents(path: Path) -> list[dict[str, object]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def regenerate_command(wrapper: str) -> list[str]:
    """The words of the command a generated wrapper's header says regenerates it (``okt gen resource ...``)."""
    lines = wrapper.splitlines()
    start = lines.index("# Regenerate with:") + 1
    end = next(index for index in range(start, len(lines)) if not lines[index].endswith("\\"))
    return [word for line in lines[start : end + 1] for word in line[3:].rstrip(" \\").split()]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "my-operator"
    scaffold.init(directory, PROJECT, WIDGET)
    return directory


def test_init_writes_a_whole_project_named_main_not_operator(project: Path) -> None:
    assert files(project) == EXPECTED_FILES
    assert 'ENTRYPOINT ["okt", "run"]' in (project / "Dockerfile").read_text()
    assert "PYTHONPATH=/app" in (project / "Dockerfile").read_text()


def test_init_generates_deploy_from_the_scaffolded_code(project: Path) -> None:
    (crd,) = documents(project / "deploy" / "crd.yaml")
    assert crd["metadata"] == {"name": "widgets.example.com"}
    kinds = [document["kind"] for document in documents(project / "deploy" / "rbac.yaml")]
    # Last, <name>-metrics-auth, as okt gen rbac in `make manifests` writes it.
    role_kinds = ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
    assert kinds == ["ServiceAccount", *role_kinds]
    (namespace,) = documents(project / "config" / "overlays" / "default" / "namespace.yaml")
    assert namespace["metadata"]["name"] == "my-operator-system"  # type: ignore[index]
    (deployment,) = documents(project / "config" / "base" / "manager.yaml")
    pod = deployment["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["serviceAccountName"] == "my-operator"
    assert pod["containers"][0]["args"][0] == "/app/main.py"


def test_init_of_names_kubectl_reads_as_other_values_writes_them_as_strings(tmp_path: Path) -> None:
    # A kind Yes and a project on: kubectl (go-yaml v2) reads plain yes and on as booleans.
    directory = tmp_path / "on"
    scaffold.init(
        directory,
        scaffold.Project.new("on", group="example.com", version="v1alpha1"),
        scaffold.Api.new("Yes", group="example.com", version="v1alpha1"),
    )

    sample = yaml.load((directory / "deploy" / "samples" / "yes.yaml").read_text(), Loader=KubectlLoader)
    manifest = yaml.load((directory / "manifests" / "yes" / "configmap.yaml").read_text(), Loader=KubectlLoader)
    wrapper = (directory / "on" / "yes" / "resources" / "config_map_yes_gen.py").read_text()

    assert sample["kind"] == "Yes"
    assert manifest["metadata"]["labels"]["app.kubernetes.io/name"] == "yes"
    assert manifest["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "on"
    assert "app.kubernetes.io/managed-by: 'on'" in wrapper
    for path in (directory / "deploy").rglob("*.yaml"):
        text = path.read_text()
        assert list(yaml.load_all(text, Loader=KubectlLoader)) == list(yaml.safe_load_all(text)), path


@pytest.mark.skipif(not os.access(KUBECTL, os.X_OK), reason="needs kubectl at /usr/bin/kubectl")
def test_kubectl_reads_the_sample_of_a_kind_named_yes_as_that_kind(tmp_path: Path) -> None:
    directory = tmp_path / "on"
    scaffold.init(
        directory,
        scaffold.Project.new("on", group="example.com", version="v1alpha1"),
        scaffold.Api.new("Yes", group="example.com", version="v1alpha1"),
    )

    sample = kubectl_reading(directory / "deploy" / "samples" / "yes.yaml")
    manifest = kubectl_reading(directory / "manifests" / "yes" / "configmap.yaml")

    assert (sample["kind"], sample["metadata"]["name"]) == ("Yes", "yes-sample")
    assert manifest["metadata"]["labels"] == {
        "app.kubernetes.io/name": "yes",
        "app.kubernetes.io/instance": "{{ cr.name }}",
        "app.kubernetes.io/managed-by": "on",
    }


def kubectl_reading(path: Path) -> dict[str, Any]:
    """The object of ``path`` as kubectl's own decoder reads it (offline: ``annotate --local``)."""
    completed = subprocess.run(
        [KUBECTL, "annotate", "--local", "-f", str(path), "okt-test=read", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    read: dict[str, Any] = json.loads(completed.stdout)
    return read


def test_init_forgets_the_project_it_imported_to_generate_deploy(project: Path) -> None:
    assert not [name for name in sys.modules if name == "my_operator" or name.startswith("my_operator.")]
    assert str(project.resolve()) not in sys.path


def test_the_child_wrapper_is_what_okt_gen_resource_writes(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = project / "my_operator" / "widget" / "resources" / "config_map_widget_gen.py"
    scaffolded = generated.read_text()
    command = regenerate_command(scaffolded)
    assert command[:3] == ["okt", "gen", "resource"]
    generated.unlink()
    monkeypatch.chdir(project)

    result = CliRunner().invoke(cli.gen, command[2:])

    assert result.exit_code == 0, result.output
    assert generated.read_text() == scaffolded


def test_the_scaffold_passes_ruff(project: Path) -> None:
    ruff = [sys.executable, "-m", "ruff"]
    checked = subprocess.run([*ruff, "check", "."], cwd=project, capture_output=True, text=True, check=False)
    formatted = subprocess.run(
        [*ruff, "format", "--check", "."], cwd=project, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout
    assert formatted.returncode == 0, formatted.stdout


def test_create_api_adds_a_kind_beside_the_first(project: Path) -> None:
    gadget = scaffold.Api.new("Gadget", group="toys.example.com", version="v1")

    scaffold.create_api(project, gadget)

    assert {"my_operator/gadget/reconciler.py", "tests/test_gadget.py", "deploy/samples/gadget.yaml"} <= files(project)
    main = (project / "main.py").read_text()
    assert "from my_operator.gadget.reconciler import GadgetReconciler\nfrom my_operator.widget" in main
    assert '__all__ = ["GadgetReconciler", "WidgetReconciler"]' in main
    names = [crd["metadata"]["name"] for crd in documents(project / "deploy" / "crd.yaml")]  # type: ignore[index]
    assert names == ["gadgets.toys.example.com", "widgets.example.com"]
    roles = [d for d in documents(project / "deploy" / "rbac.yaml") if d["kind"] == "ClusterRole"]
    (role,) = [d for d in roles if d["metadata"]["name"] == "my-operator"]  # type: ignore[index]
    groups = {group for rule in role["rules"] for group in rule["apiGroups"]}  # type: ignore[index, attr-defined]
    assert {"toys.example.com", "example.com"} <= groups


def test_create_api_refuses_a_kind_the_project_has(project: Path) -> None:
    before = {path: path.read_bytes() for path in project.rglob("*") if path.is_file()}
    with pytest.raises(errors.CodegenError, match="the project has a Widget already"):
        scaffold.create_api(project, WIDGET)
    assert {path: path.read_bytes() for path in project.rglob("*") if path.is_file()} == before


def test_create_api_refuses_a_kind_whose_files_the_author_has_before_writing(project: Path) -> None:
    mine = project / "tests" / "test_gadget.py"
    mine.write_text("def test_mine():\n    assert True\n")
    before = {path: path.read_bytes() for path in project.rglob("*") if path.is_file()}

    with pytest.raises(errors.CodegenError, match=r"tests/test_gadget\.py exists"):
        scaffold.create_api(project, scaffold.Api.new("Gadget", group="example.com", version="v1"))

    assert {path: path.read_bytes() for path in project.rglob("*") if path.is_file()} == before


def test_create_api_refuses_a_main_it_cannot_extend_before_writing(project: Path) -> None:
    (project / "main.py").write_text("from my_operator import everything\n")
    expected = re.escape("add `from my_operator.gadget.reconciler import GadgetReconciler`")
    with pytest.raises(errors.CodegenError, match=expected):
        scaffold.create_api(project, scaffold.Api.new("Gadget", group="example.com", version="v1"))
    assert not (project / "my_operator" / "gadget").exists()


def test_create_api_extends_an_all_written_with_single_quotes(project: Path) -> None:
    main = project / "main.py"
    main.write_text(main.read_text().replace('["WidgetReconciler"]', "['WidgetReconciler']"))

    scaffold.create_api(project, scaffold.Api.new("Gadget", group="example.com", version="v1"))

    assert '__all__ = ["GadgetReconciler", "WidgetReconciler"]' in main.read_text()


def test_okt_create_api_with_an_all_it_cannot_read_is_one_line_writing_nothing(project: Path) -> None:
    main = project / "main.py"
    main.write_text(main.read_text().replace('["WidgetReconciler"]', "[WidgetReconciler.__name__]"))
    before = {path: path.read_bytes() for path in project.rglob("*") if path.is_file()}

    result = CliRunner().invoke(cli_main.cli, ["create", "api", "--kind", "Gadget", "--dir", str(project)])

    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: main.py") and len(result.output.strip().splitlines()) == 1
    assert {path: path.read_bytes() for path in project.rglob("*") if path.is_file()} == before


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(errors.CodegenError, match="not an empty folder"):
        scaffold.init(tmp_path, PROJECT, WIDGET)
    assert files(tmp_path) == {"notes.txt"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["My_Operator", "--group", "example.com", "--version", "v1", "--kind", "W"], "invalid project name"),
        (['x"; import os', "--group", "example.com", "--version", "v1", "--kind", "W"], "invalid project name"),
        (["queue", "--group", "example.com", "--version", "v1", "--kind", "W"], "would shadow a module"),
        (["yaml", "--group", "example.com", "--version", "v1", "--kind", "W"], "would shadow a module"),
        (["pydantic", "--group", "example.com", "--version", "v1", "--kind", "W"], "would shadow a module"),
        (["op", "--group", "example", "--version", "v1", "--kind", "W"], "a CRD's group needs one"),
        (["op", "--group", "example.com", "--version", "1", "--kind", "W"], "invalid --version '1'"),
        (["op", "--group", "example.com", "--version", "v1", "--kind", "widget"], "expected a CamelCase kind"),
        (["op", "--group", "example.com", "--version", "v1", "--kind", 'W"\nimport os'], "expected a CamelCase"),
        # WidgetList must be a DNS label (63 characters at most), and a group a DNS name (253 at most).
        (["op", "--group", "example.com", "--version", "v1", "--kind", "W" + "a" * 59], "at most 59 characters"),
        (["op", "--group", "a" * 242 + ".example.com", "--version", "v1", "--kind", "W"], "at most 253 characters"),
        # The CRD's own name, <plural>.<group>, is a DNS name too: ws.<group of 253> is 256 characters.
        (["op", "--group", GROUP_253, "--version", "v1", "--kind", "W"], "the CRD's name ws."),
        # Its validating webhook is named validate.<plural>.<group>, a DNS name: 259 characters with a 247 group.
        (["op", "--group", GROUP_253[6:], "--version", "v1", "--kind", "W"], "validate.ws."),
    ],
)
def test_okt_init_refuses_bad_names_in_one_line_writing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli_main.cli, ["init", *arguments])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_okt_init_refuses_an_option_given_twice_writing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The project was made under the second group, the first dropped without a word.
    monkeypatch.chdir(tmp_path)
    arguments = ["init", "op", "--group", "example.com", "--group", "example.org", "--version", "v1", "--kind", "W"]
    result = CliRunner().invoke(cli_main.cli, arguments)
    assert result.exit_code == 2
    assert "Error: '--group' is given 2 times: it takes one value (the last would replace the others)" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "arguments",
    [["init", "op", "--group", "example.com", "--version", "v1", "--kind", "W"], ["create", "api", "--kind", "Gadget"]],
    ids=["init", "create-api"],
)
def test_an_empty_dir_is_one_line_writing_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: list[str]
) -> None:
    # Path("") is ".": okt init --dir '' made its project in the current folder, not in ./op.
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli_main.cli, [*arguments, "--dir", ""])
    assert result.exit_code == 2
    assert result.output == "Error: Invalid value for '--dir': it is empty: name a folder (. for this one)\n"
    assert list(tmp_path.iterdir()) == []


def test_okt_create_api_outside_a_project_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_main.cli, ["create", "api", "--kind", "Gadget", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "run okt create api in a project made by okt init" in result.output


def test_okt_init_prints_each_file_and_the_next_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    arguments = ["init", "my-operator", "--group", "example.com", "--version", "v1alpha1", "--kind", "Widget"]
    result = CliRunner().invoke(cli_main.cli, arguments)
    assert result.exit_code == 0, result.output
    assert "created  main.py" in result.output.splitlines()
    assert "Next: cd my-operator && make test" in result.output
    assert files(tmp_path / "my-operator") == EXPECTED_FILES


def group_of(length: int) -> str:
    """An API group of ``length`` characters (at least 12), in labels of at most 63."""
    labels = "".join("abcdefghijklmnopqrstuvwxyz"[index % 26] for index in range(length - len(".example.com")))
    return ".".join([*(labels[start : start + 62] for start in range(0, len(labels), 63)), "example", "com"])


def longest_group(kind: str) -> str:
    """The longest API group of a scaffolded ``kind``: its validating webhook's name, ``validate.<plural>.<group>``,
    is a DNS name of 253 characters."""
    return group_of(253 - len("validate.") - len(kube_kinds.plural_of(kind)) - 1)


def test_a_scaffold_passes_ruff_at_every_length_of_its_names(tmp_path: Path) -> None:
    # "AbAb..." is the kind with the longest module name for its length (ab_ab_...), up to the longest kind a CRD
    # takes; the groups cross the lengths at which an apiVersion line stops fitting in 120 columns, on one line and
    # in parentheses, up to the longest group the kind's CRD name leaves.
    project = scaffold.Project.new("abcdefghij-abcdefghij-abcdefghij-abcdefg", group="example.com", version="v1")
    for length in range(1, 60):
        kind = ("Ab" * 30)[:length]
        group = longest_group(kind) if length in (1, 59) else group_of(60 + length)
        api = scaffold.Api.new(kind, group=group, version="v1alpha1")
        scaffold.init(tmp_path / f"project-{length}", project, api)
    second = scaffold.Api.new(("Zy" * 30)[:59], group=longest_group(("Zy" * 30)[:59]), version="v1beta1")
    scaffold.create_api(tmp_path / "project-59", second)

    ruff = [sys.executable, "-m", "ruff"]
    checked = subprocess.run(
        [*ruff, "check", "--no-cache", "."], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    formatted = subprocess.run(
        [*ruff, "format", "--check", "--no-cache", "--diff", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )

    assert checked.returncode == 0, checked.stdout
    assert formatted.returncode == 0, formatted.stdout
    main = (tmp_path / "project-59" / "main.py").read_text()
    assert f"{second.kind}Reconciler" in main and f"{('Ab' * 30)[:59]}Reconciler" in main


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` and its bytes (Python's bytecode caches left out), and every folder."""
    return {
        path.relative_to(directory).as_posix(): path.read_bytes() if path.is_file() else b"<folder>"
        for path in directory.rglob("*")
        if "__pycache__" not in path.parts
    }


def test_okt_create_api_failing_halfway_leaves_the_project_as_it_was_in_one_line(project: Path) -> None:
    # a folder where deploy/crd.yaml goes: the kind's files were written and main.py changed, then the write of
    # deploy/ failed, and they stayed (main.py importing a kind whose manifests were never generated)
    (project / "deploy" / "crd.yaml").unlink()
    (project / "deploy" / "crd.yaml").mkdir()
    before = tree(project)

    result = CliRunner().invoke(cli_main.cli, ["create", "api", "--kind", "Gadget", "--dir", str(project)])

    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: cannot write ") and len(result.output.strip().splitlines()) == 1
    assert "deploy/crd.yaml" in result.output
    assert tree(project) == before


def deep_folder(base: Path, length: int) -> Path:
    """A folder under ``base`` whose path has ``length`` characters (each name at most 255)."""
    directory = base
    while len(str(directory)) < length:
        directory /= "d" * min(200, length - len(str(directory)) - 1)
    directory.mkdir(parents=True)
    return directory


def test_okt_init_failing_halfway_writes_nothing_in_one_line(tmp_path: Path) -> None:
    # a path too long for the kind's files but not for the project's (4096 characters, Linux's PATH_MAX): the
    # project's files were written, then the first of the kind's failed, and they stayed in the folder
    parent = deep_folder(tmp_path, 4096 - 40)
    target = parent / "op"
    arguments = ["init", "op", "--group", "example.com", "--version", "v1", "--kind", "Widget", "--dir", str(target)]

    result = CliRunner().invoke(cli_main.cli, arguments)

    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: cannot write ") and len(result.output.strip().splitlines()) == 1
    assert list(parent.iterdir()) == []


def test_okt_init_failing_halfway_leaves_an_empty_folder_given_empty(tmp_path: Path) -> None:
    target = deep_folder(tmp_path, 4096 - 40) / "op"
    target.mkdir()
    arguments = ["init", "op", "--group", "example.com", "--version", "v1", "--kind", "Widget", "--dir", str(target)]

    result = CliRunner().invoke(cli_main.cli, arguments)

    assert result.exit_code == 2, result.output
    assert list(target.iterdir()) == []


def test_okt_init_failing_after_importing_the_project_leaves_no_bytecode_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the project is imported to generate deploy/ and config/, which writes Python's bytecode beside its modules: a
    # failure after that left a __pycache__ folder in the folder given empty
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    target = deep_folder(tmp_path, 4096 - 39) / "op"  # config/overlays/default/kustomization.yaml is too long there
    target.mkdir()
    arguments = ["init", "op", "--group", "example.com", "--version", "v1", "--kind", "W", "--dir", str(target)]

    result = CliRunner().invoke(cli_main.cli, arguments)

    assert result.exit_code == 2, result.output
    assert "kustomization.yaml" in result.output
    assert list(target.iterdir()) == []


def test_data_added_to_the_scaffolded_manifest_reaches_the_child_beside_the_message(project: Path) -> None:
    manifest = project / "manifests" / "widget" / "configmap.yaml"
    manifest.write_text(manifest.read_text().replace('  message: ""\n', '  message: ""\n  color: blue\n'))
    generated = project / "my_operator" / "widget" / "resources" / "config_map_widget_gen.py"
    command = regenerate_command(generated.read_text())
    regenerated = subprocess.run(
        [sys.executable, "-m", "okt", *command[1:]], cwd=project, capture_output=True, text=True, check=False
    )
    assert regenerated.returncode == 0, regenerated.stderr
    script = (
        "import okt\n"
        "from okt.kube import kinds\n"
        "from okt.testing import FakeClient\n"
        "from my_operator.widget.reconciler import WidgetReconciler\n"
        "kind = kinds.Kind('example.com/v1alpha1', 'Widget', 'widgets')\n"
        "client = FakeClient(kinds=[kind])\n"
        "client.put({'apiVersion': 'example.com/v1alpha1', 'kind': 'Widget',\n"
        "            'metadata': {'name': 'w', 'namespace': 'ns'}, 'spec': {'message': 'hi'}})\n"
        "run = okt.reconcile(WidgetReconciler(), client, None, 'ns', 'w', kind=kind)\n"
        "assert run.outcome == okt.Outcome.done(), run.outcome\n"
        "print(sorted(client.get(client.resolve('v1', 'ConfigMap'), 'w-widget', 'ns')['data'].items()))\n"
    )

    ran = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True, check=False)

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == "[('color', 'blue'), ('message', 'hi')]"
