"""``okt gen resource --crd``: a wrapper of a custom kind carries its CRD's map lists, and reads them back as okt would
from the CRD itself."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from okt.codegen import child_schema, cli, dictionary, errors, okt_compat, resource
from okt.resources import list_keys

LISTENER_KIND = """\
kinds:
  Listener:
    apiVersion: net.example.com/v1
    plural: listeners
    namespaced: true
    base: MutableResource
    hashed: [spec]
"""

LISTENER = """\
apiVersion: net.example.com/v1
kind: Listener
metadata:
  name: edge
spec:
  ports:
    - name: http
      port: 80
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "description": "What the listener serves.",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "minimum": 1},
                            "protocol": {"type": "string", "default": "TCP", "enum": ["TCP", "UDP"]},
                            "routes": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["path"],
                                "items": {"type": "object", "properties": {"path": {"type": "string"}}},
                            },
                        },
                    },
                },
                "hosts": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
}


def crd(schema: Any = SCHEMA, *, kind: str = "Listener", version: str = "v1") -> dict[str, Any]:
    served = {"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "listeners.net.example.com"},
        "spec": {
            "group": "net.example.com",
            "names": {"kind": kind, "plural": "listeners"},
            "scope": "Namespaced",
            "versions": [served],
        },
    }


def malformed(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """:func:`crd` with its ``spec`` edited by ``edit`` (a value of the wrong type somewhere)."""
    written = crd()
    edit(written["spec"])
    return written


def generate(workdir: Path, crd_text: str, **overrides: Any) -> list[resource.FileResult]:
    (workdir / "extra.yaml").write_text(LISTENER_KIND)
    (workdir / "listener.yaml").write_text(LISTENER)
    (workdir / "crd.yaml").write_text(crd_text)
    arguments: dict[str, Any] = {
        "resource_type": "Listener",
        "cr_kind": "Gateway",
        "group": "net",
        "version": "v1",
        "manifest_path": Path("listener.yaml"),
        "out_dir": Path("resources"),
        "dictionary_files": [Path("extra.yaml")],
        "crd_path": Path("crd.yaml"),
        **overrides,
    }
    return resource.generate(**arguments)


def imported(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"generated_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_ruff(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "ruff"), *arguments, "--no-cache"]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_the_wrapper_of_a_custom_kind_carries_the_map_lists_of_its_crd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate(tmp_path, yaml.safe_dump_all([{"kind": "Namespace"}, crd()]))
    source = (tmp_path / "resources" / "listener_gateway_gen.py").read_text()

    module = imported(tmp_path / "resources" / "listener_gateway_gen.py")

    assert module.ListenerGatewayBase.keyed_lists == list_keys.Lists.of(list_keys.from_openapi(SCHEMA))
    assert module.ListenerGatewayBase.openapi_schema == list_keys.to_openapi(list_keys.from_openapi(SCHEMA))
    assert "description" not in source and "minimum" not in source, "only the ways to the map lists"
    assert "--crd crd.yaml" in source, "regenerated from the CRD too"


def test_the_one_schema_of_an_apiextensions_v1beta1_crd_serving_one_version_is_read(tmp_path: Path) -> None:
    """apiextensions.k8s.io/v1beta1 (Kubernetes before 1.22) also spells a CRD of one version ``spec.version``, with
    its schema in ``spec.validation``."""
    legacy = crd()
    spec = legacy["spec"]
    del spec["versions"]
    spec.update(version="v1", validation={"openAPIV3Schema": SCHEMA})
    legacy["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(legacy))
    listener = dictionary.load([_write(tmp_path / "extra.yaml", LISTENER_KIND)]).lookup("Listener")

    assert child_schema.read(tmp_path / "crd.yaml", listener) == list_keys.to_openapi(list_keys.from_openapi(SCHEMA))


@pytest.mark.parametrize("line_length", [88, 79])
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check", "--select", "E,F,W,I,RUF"], id="check"),
        pytest.param(["format", "--check"], id="format"),
    ],
)
def test_the_schema_the_generator_writes_passes_ruff(
    command: list[str], line_length: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {line_length}\n")
    generate(tmp_path, yaml.safe_dump(crd()))

    result = run_ruff(*command, "resources")

    assert result.returncode == 0, result.stdout + result.stderr


def test_a_crd_without_map_lists_gives_an_empty_schema_which_compares_every_list_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate(tmp_path, yaml.safe_dump(crd({"type": "object", "x-kubernetes-preserve-unknown-fields": True})))

    module = imported(tmp_path / "resources" / "listener_gateway_gen.py")

    assert module.OPENAPI_SCHEMA == {"type": "object"}
    assert module.ListenerGatewayBase.keyed_lists == list_keys.Lists({}, {})


@pytest.mark.parametrize(
    ("crd_text", "message"),
    [
        pytest.param(yaml.safe_dump(crd(kind="Gateway")), "holds no CustomResourceDefinition of Listener", id="kind"),
        pytest.param(yaml.safe_dump(crd(version="v2")), "in group net.example.com serving v1", id="version"),
        pytest.param("a: [", "is not YAML", id="yaml"),
        pytest.param(
            yaml.safe_dump(
                crd(
                    {
                        "properties": {
                            "spec": {"properties": {"ports": {"type": "array", "x-kubernetes-list-type": "map"}}}
                        }
                    }
                )
            ),
            "the openAPIV3Schema of Listener v1: .spec.ports: x-kubernetes-list-type map needs",
            id="no-keys",
        ),
        pytest.param(
            yaml.safe_dump(malformed(lambda spec: spec["versions"][0].update(schema="oops"))),
            "the CustomResourceDefinition of Listener: spec.versions[0].schema is not a mapping but a str",
            id="schema-not-a-mapping",
        ),
        pytest.param(
            yaml.safe_dump(malformed(lambda spec: spec.update(versions=3))),
            "the CustomResourceDefinition of Listener: spec.versions is not a list but a int",
            id="versions-not-a-list",
        ),
        pytest.param(
            yaml.safe_dump(malformed(lambda spec: spec.update(versions=["v1"]))),
            "the CustomResourceDefinition of Listener: spec.versions[0] is not a mapping but a str",
            id="version-not-a-mapping",
        ),
        pytest.param(
            yaml.safe_dump(
                malformed(
                    lambda spec: spec["versions"][0].update(schema=None, name="v1") or spec.update(validation=[1])
                )
            ),
            "the CustomResourceDefinition of Listener: spec.validation is not a mapping but a list",
            id="validation-not-a-mapping",
        ),
    ],
)
def test_a_crd_that_does_not_give_the_childs_schema_is_one_error_line_before_anything_is_written(
    crd_text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError, match=r"crd\.yaml") as refused:
        generate(tmp_path, crd_text)

    assert message in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "resources").exists()


def test_a_crd_for_a_built_in_kind_is_refused(tmp_path: Path) -> None:
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd()))
    with pytest.raises(errors.CodegenError, match=r"Service \(v1\) is a built-in kind"):
        child_schema.read(tmp_path / "crd.yaml", dictionary.builtin().lookup("Service"))


def test_an_unreadable_crd_is_refused_with_the_reason(tmp_path: Path) -> None:
    spec = dictionary.load([_write(tmp_path / "extra.yaml", LISTENER_KIND)]).lookup("Listener")
    with pytest.raises(errors.CodegenError, match=r"cannot read --crd .*missing\.yaml: No such file"):
        child_schema.read(tmp_path / "missing.yaml", spec)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_list_of_keys_too_long_for_its_line_is_written_one_key_a_line() -> None:
    schema = {"properties": {"ports": {"x-kubernetes-list-map-keys": ["name", "protocol"]}}}

    assert child_schema.assignment(schema, 60).split("\n") == [
        "OPENAPI_SCHEMA: dict[str, Any] = {",
        '    "properties": {',
        '        "ports": {',
        '            "x-kubernetes-list-map-keys": [',
        '                "name",',
        '                "protocol",',
        "            ],",
        "        },",
        "    },",
        "}",
    ]


@pytest.mark.parametrize(
    "okt_spelling", [pytest.param(False, id="okt-gen-resource"), pytest.param(True, id="okt-spelling")]
)
def test_the_command_line_takes_the_crd(okt_spelling: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extra.yaml").write_text(LISTENER_KIND)
    (tmp_path / "listener.yaml").write_text(LISTENER)
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd()))
    rest = ["--kind", "Gateway", "--group", "net", "--version", "v1", "--dictionary", "extra.yaml", "listener.yaml"]

    if okt_spelling:
        with pytest.raises(SystemExit) as exited:
            okt_compat.main(["-type=Listener", "-crd=crd.yaml", *rest])
        assert exited.value.code in (0, None)
    else:
        result = CliRunner().invoke(cli.gen, ["resource", "--type", "Listener", "--crd", "crd.yaml", *rest])
        assert result.exit_code == 0, result.output

    assert "openapi_schema = OPENAPI_SCHEMA" in (tmp_path / "resources" / "listener_gateway_gen.py").read_text()


def test_the_wrapper_of_a_custom_kind_passes_mypy_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    generate(tmp_path, yaml.safe_dump(crd()))
    repo = Path(__file__).resolve().parents[3]
    command = [str(Path(sys.executable).parent / "mypy"), "--strict", "--config-file", str(repo / "pyproject.toml")]

    done = subprocess.run(
        [*command, str(tmp_path / "resources")],
        cwd=repo,
        env={**os.environ, "MYPYPATH": str(repo)},
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
