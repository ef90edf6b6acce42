"""``okt gen resource``: golden files for every dictionary kind, regeneration, templates and input errors.

Golden files: for each kind of the shipped dictionary, ``manifests/<kind>.yaml`` is generated as a child of the
``Memcached`` custom resource (group ``cache``, version ``v1alpha1``, output package ``resources``) and both modules are
compared byte for byte with ``golden/<kind>_memcached_gen.py`` and ``golden/<kind>_memcached.py``. After an intended
change of the generated code, regenerate the goldens with::

    OKT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/codegen -p no:okt

and review the diff. ``test_codegen_generated_code.py`` lints, type-checks and imports the goldens.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from okt.codegen import dictionary, errors, manifest, resource
from okt.resources import templating

HERE = Path(__file__).parent
MANIFESTS = HERE / "manifests"
GOLDEN = HERE / "golden"
UPDATE_GOLDEN = os.environ.get("OKT_UPDATE_GOLDEN") == "1"
KINDS = [spec.kind for spec in dictionary.builtin()]


def generate_in(
    workdir: Path, kind: str, manifest_text: str | None = None, **overrides: object
) -> list[resource.FileResult]:
    """Generate the ``kind`` wrapper from a copy of its sample manifest, with paths relative to ``workdir``."""
    (workdir / "manifests").mkdir(exist_ok=True)
    name = f"{resource.snake_case(kind)}.yaml"
    target = workdir / "manifests" / name
    if manifest_text is None:
        shutil.copyfile(MANIFESTS / name, target)
    else:
        target.write_text(manifest_text, encoding="utf-8")
    arguments: dict[str, object] = {
        "resource_type": kind,
        "cr_kind": "Memcached",
        "group": "cache",
        "version": "v1alpha1",
        "manifest_path": Path("manifests") / name,
        "out_dir": Path("resources"),
    }
    arguments.update(overrides)
    return resource.generate(**arguments)  # type: ignore[arg-type]


def template_of(source: str) -> str:
    """The value of ``TEMPLATE`` in a generated module, read without importing it."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TEMPLATE" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError("no TEMPLATE in the generated module")


def spec_for(kind: str) -> dictionary.KindSpec:
    return dictionary.builtin().lookup(kind)


def run_ruff(*arguments: str) -> subprocess.CompletedProcess[str]:
    """The virtual environment's ruff, without its cache, on generated files."""
    command = [str(Path(sys.executable).parent / "ruff"), *arguments, "--no-cache"]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("kind", KINDS)
def test_generated_modules_match_the_golden_files(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, kind)
    gen_name, user_name = resource.module_names(kind, "Memcached")
    for module in (gen_name, user_name):
        produced = (tmp_path / "resources" / f"{module}.py").read_text(encoding="utf-8")
        golden = GOLDEN / f"{module}.py"
        if UPDATE_GOLDEN:
            GOLDEN.mkdir(exist_ok=True)
            golden.write_text(produced, encoding="utf-8")
        assert golden.exists(), f"missing golden {golden.name}: run with OKT_UPDATE_GOLDEN=1"
        assert produced == golden.read_text(encoding="utf-8"), f"{module}.py differs from its golden file"


@pytest.mark.parametrize("kind", KINDS)
def test_every_dictionary_kind_has_a_sample_manifest_of_its_api_version(kind: str) -> None:
    document = yaml.safe_load(manifest.neutralized((MANIFESTS / f"{resource.snake_case(kind)}.yaml").read_text()))
    assert (document["apiVersion"], document["kind"]) == (spec_for(kind).api_version, kind)


@pytest.mark.parametrize("kind", KINDS)
def test_template_is_the_manifest_with_name_and_namespace_placeholders(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, kind)
    gen_name, _ = resource.module_names(kind, "Memcached")
    template = template_of((tmp_path / "resources" / f"{gen_name}.py").read_text(encoding="utf-8"))
    original = yaml.safe_load(manifest.neutralized((MANIFESTS / f"{resource.snake_case(kind)}.yaml").read_text()))
    rendered = yaml.safe_load(manifest.neutralized(template))
    metadata = rendered.pop("metadata")
    original_metadata = original.pop("metadata")
    assert rendered == original
    assert metadata["name"] == manifest.neutral("{{ name }}")
    if spec_for(kind).namespaced:
        assert metadata["namespace"] == manifest.neutral("{{ namespace }}")
    else:
        assert "namespace" not in metadata
    assert {k: v for k, v in metadata.items() if k not in ("name", "namespace")} == {
        k: v for k, v in original_metadata.items() if k not in ("name", "namespace")
    }


def test_regeneration_keeps_the_authors_module_and_rewrites_the_generated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = generate_in(tmp_path, "ConfigMap")
    user_file = tmp_path / "resources" / "config_map_memcached.py"
    gen_file = tmp_path / "resources" / "config_map_memcached_gen.py"
    edited = user_file.read_text() + "\n# the author's edit\nLIMIT = 3\n"
    user_file.write_text(edited)
    gen_file.write_text("# stale\n")
    second = generate_in(tmp_path, "ConfigMap")
    assert [(r.path.name, r.action) for r in first] == [
        ("config_map_memcached_gen.py", resource.Action.WRITTEN),
        ("config_map_memcached.py", resource.Action.CREATED),
        ("__init__.py", resource.Action.CREATED),
    ]
    assert [(r.path.name, r.action) for r in second] == [
        ("config_map_memcached_gen.py", resource.Action.WRITTEN),
        ("config_map_memcached.py", resource.Action.KEPT),
    ]
    assert user_file.read_text() == edited
    assert gen_file.read_text() == (GOLDEN / "config_map_memcached_gen.py").read_text()


def test_regeneration_keeps_an_existing_package_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "__init__.py").write_text('"""Mine."""\n')
    results = generate_in(tmp_path, "Service")
    assert "__init__.py" not in [r.path.name for r in results]
    assert (tmp_path / "resources" / "__init__.py").read_text() == '"""Mine."""\n'


@pytest.mark.parametrize(
    ("name", "snake"),
    [
        ("ConfigMap", "config_map"),
        ("HorizontalPodAutoscaler", "horizontal_pod_autoscaler"),
        ("Memcached", "memcached"),
        ("MyKind", "my_kind"),
        ("HTTPRoute", "http_route"),
        ("Pod", "pod"),
        ("Ec2Node", "ec2_node"),
    ],
)
def test_snake_case_splits_camel_case_words(name: str, snake: str) -> None:
    assert resource.snake_case(name) == snake


def test_module_and_class_names_combine_the_type_and_the_custom_resource_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, "PodDisruptionBudget", cr_kind="MyKind", group="demo")
    source = (tmp_path / "resources" / "pod_disruption_budget_my_kind.py").read_text()
    assert "class PodDisruptionBudgetMyKind(PodDisruptionBudgetMyKindBase):" in source
    assert "from .pod_disruption_budget_my_kind_gen import PodDisruptionBudgetMyKindBase" in source


def test_header_records_the_command_that_regenerates_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    extension = tmp_path / "extra.yaml"
    extension.write_text("kinds:\n  ConfigMap:\n    hashed: [data]\n")
    generate_in(tmp_path, "ConfigMap", resource_type="configmap", dictionary_files=[Path("extra.yaml")])
    header = (tmp_path / "resources" / "config_map_memcached_gen.py").read_text().split('"""')[0]
    assert header.splitlines() == [
        "# Code generated by okt gen resource. DO NOT EDIT.",
        "# Regenerate with:",
        "#   okt gen resource --type ConfigMap --kind Memcached --group cache \\",
        "#     --version v1alpha1 --out resources --dictionary extra.yaml \\",
        "#     manifests/config_map.yaml",
        "# Your code goes in this module, which regeneration never touches:",
        "#   config_map_memcached.py",
    ]


def test_dictionary_extension_changes_the_hashed_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extra.yaml").write_text("kinds:\n  ConfigMap:\n    hashed: [data]\n")
    generate_in(tmp_path, "ConfigMap", dictionary_files=[Path("extra.yaml")])
    source = (tmp_path / "resources" / "config_map_memcached_gen.py").read_text()
    assert 'HASHED_FIELDS: tuple[str, ...] = ("data",)\n' in source


BASE = """\
apiVersion: v1
kind: ConfigMap
"""


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param(
            "metadata:\n  name: a\n  namespace: b\n",
            'metadata:\n  name: "{{ name }}"\n  namespace: "{{ namespace }}"\n',
            id="both-replaced",
        ),
        pytest.param(
            "metadata:\n  name: a\n",
            'metadata:\n  name: "{{ name }}"\n  namespace: "{{ namespace }}"\n',
            id="namespace-added-after-name",
        ),
        pytest.param(
            "metadata:\n  labels:\n    x: z\n",
            'metadata:\n  name: "{{ name }}"\n  namespace: "{{ namespace }}"\n  labels:\n    x: z\n',
            id="name-and-namespace-added",
        ),
        pytest.param(
            "metadata:\n    # the identity\n    namespace: b\n    name: 'a'  # old\n",
            'metadata:\n    # the identity\n    namespace: "{{ namespace }}"\n    name: "{{ name }}"\n',
            id="four-space-indent-and-comments",
        ),
        pytest.param(
            "metadata:\n  labels:\n    name: keep\n  name: a\n",
            'metadata:\n  labels:\n    name: keep\n  name: "{{ name }}"\n  namespace: "{{ namespace }}"\n',
            id="nested-name-untouched",
        ),
    ],
)
def test_placeholders_replace_only_the_identity_lines(metadata: str, expected: str) -> None:
    path = Path("m.yaml")
    child = manifest.Manifest(path=path, text=BASE + metadata, document=yaml.safe_load(BASE + metadata))
    assert manifest.to_template(child, spec_for("ConfigMap")) == BASE + expected


def test_flow_style_metadata_falls_back_to_a_redumped_manifest(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + "metadata: {name: a, labels: {x: z}}\ndata:\n  k: v\n")
    template = manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))
    assert yaml.safe_load(manifest.neutralized(template)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": manifest.neutral("{{ name }}"),
            "labels": {"x": "z"},
            "namespace": manifest.neutral("{{ namespace }}"),
        },
        "data": {"k": "v"},
    }


def test_a_redumped_manifest_keeps_the_text_of_a_date_or_a_time(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + "metadata: {name: a}\ndata:\n  since: 2024-05-01T10:00:00Z\n  at: 12:30\n")
    template = manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))
    rendered = templating.render_template(template, {"name": "a", "namespace": "b"})
    assert rendered["data"] == {"since": "2024-05-01T10:00:00Z", "at": "12:30"}  # was "2024-05-01 10:00:00+00:00"


def test_an_anchored_name_keeps_its_value_at_each_alias(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + "metadata:\n  name: &app web\n  labels:\n    app: *app\ndata:\n  owner: *app\n")
    # was: manifest m.yaml is not valid YAML: found undefined alias 'app' (line 7, column 10), of a manifest kubectl
    # applies: the edit had dropped the anchor with the name
    template = manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))
    rendered = templating.render_template(template, {"name": "a", "namespace": "b"})
    assert rendered["metadata"] == {"name": "a", "namespace": "b", "labels": {"app": "web"}}
    assert rendered["data"] == {"owner": "web"}


def test_an_anchored_name_beside_expressions_is_refused_saying_how_to_write_it(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        BASE + "metadata:\n  name: &app web\n  labels:\n    app: *app\ndata:\n  size: '{{ cr.spec.size }}'\n"
    )
    with pytest.raises(errors.CodegenError, match="with no anchor: write an anchored name's value at each of its"):
        manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))


def test_an_unused_anchor_on_the_name_is_dropped_with_the_line_alone(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(BASE + "metadata:\n  name: &app web  # the app\ndata:\n  k: v  # kept\n")
    template = manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))
    assert template == BASE + 'metadata:\n  name: "{{ name }}"\n  namespace: "{{ namespace }}"\ndata:\n  k: v  # kept\n'


def test_a_redumped_manifest_keeps_the_text_kubectl_would_read_as_a_number(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    quoted = {"mode": "0o17", "size": "1e3", "answer": "y", "zip": "08", "half": "-.5"}
    path.write_text(BASE + "metadata: {name: a}\ndata:\n" + "".join(f'  {k}: "{v}"\n' for k, v in quoted.items()))
    template = manifest.to_template(manifest.read(path, spec_for("ConfigMap")), spec_for("ConfigMap"))
    rendered = templating.render_template(template, {"name": "a", "namespace": "b"})
    assert rendered["data"] == quoted


def test_cluster_scoped_kinds_get_no_namespace_placeholder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, "ClusterRole")
    template = template_of((tmp_path / "resources" / "cluster_role_memcached_gen.py").read_text())
    assert 'name: "{{ name }}"' in template
    assert "namespace" not in template


def test_template_keeps_backslashes_and_triple_quotes_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = BASE + 'metadata:\n  name: a\ndata:\n  path: C:\\temp\\n\n  quote: \'say """hi"""\'\n'
    generate_in(tmp_path, "ConfigMap", manifest_text=text)
    template = template_of((tmp_path / "resources" / "config_map_memcached_gen.py").read_text())
    assert template == text.replace("name: a", 'name: "{{ name }}"\n  namespace: "{{ namespace }}"')


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("  readme.md: |\n    first  \n    second\n", {"readme.md": "first  \nsecond\n"}),  # was "first\nsecond\n"
        ("  tab: |\n    a\t\n", {"tab": "a\t\n"}),
        ("  kept: |+\n    a\n\n\n", {"kept": "a\n\n\n"}),  # was "a\n"
        ("  plain: a   \n  other: b\t\n\n\n", {"plain": "a", "other": "b"}),
    ],
    ids=["markdown line break", "tab", "kept blank lines", "meaningless blanks"],
)
def test_a_block_scalar_keeps_the_blanks_that_end_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: str, expected: dict[str, str]
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, "ConfigMap", manifest_text=BASE + "metadata:\n  name: a\ndata:\n" + data)
    source = (tmp_path / "resources" / "config_map_memcached_gen.py").read_text()
    rendered = templating.render_template(template_of(source), {"cr": None, "name": "n", "namespace": "ns"})
    assert rendered["data"] == expected
    assert not [line for line in source.split("\n") if line != line.rstrip()]  # ruff's W291: escaped as \x20


def test_a_jinja2_comment_opener_in_the_manifest_renders_as_the_text_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `${#}` and `${#VAR}` (a shell's argument count and a string's length) open a Jinja2 comment: the manifest's own
    # text must come out of the rendered template as it went in.
    monkeypatch.chdir(tmp_path)
    script = 'set -- a b\necho "${#} ${#1}"\n[ ${#NAME} -gt 3 ] && echo long #}\n'
    text = BASE + "metadata:\n  name: a\ndata:\n  run.sh: |\n" + textwrap.indent(script, "    ") + "  plain: a{#b\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=text)
    template = template_of((tmp_path / "resources" / "config_map_memcached_gen.py").read_text())

    rendered = templating.render_template(template, {"cr": None, "name": "n", "namespace": "ns"})

    assert rendered["data"] == {"run.sh": script, "plain": "a{#b"}
    assert rendered["metadata"] == {"name": "n", "namespace": "ns"}


@pytest.mark.parametrize(
    "text",
    [
        "Instance {{ $labels.instance }} down ({{ $value | humanize }})",  # was refused: not a Jinja2 expression
        "{{ .Values.image | quote }}",  # was refused
        "{{ range .Alerts }}{{ .Labels.severity }}{{ end }}",  # was refused
        "{{ if .Firing }}fire{{ end }}",  # was refused
        "{{ end }}",  # was run: 'end' is undefined, on every render
        "{{ range .Items }}",  # was run: 'range' is a function, with no attribute Items
        "{{- else -}}",  # was run
        "{{ len .Alerts }}",  # was run
        "{% if enabled %}on{% endif %}",  # was run: 'enabled' is undefined
        "{% raw %}x{% endraw %}",  # was run: rendered x
        "{%- set a = 1 %}a",  # was run: rendered a
        "{# a note #}",  # was kept as the text (the opener escaped)
        "{{/* a Go comment */}}",  # was refused
        "{{ 'a' }",
        "}} %} #}",
    ],
)
def test_template_text_of_the_manifest_that_is_not_okts_expression_renders_as_written(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    block = BASE + "metadata:\n  name: a\ndata:\n  text: |\n    " + text + "\n  size: '{{ cr.size }} {{ '{{' }}'\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=block)
    template = template_of((tmp_path / "resources" / "config_map_memcached_gen.py").read_text())
    rendered = templating.render_template(template, {"cr": {"size": 3}, "name": "n", "namespace": "ns"})
    assert rendered["data"] == {"text": text + "\n", "size": "3 {{"}  # okt's own expressions still render


@pytest.mark.parametrize(
    ("candidate", "expression"),
    [
        ("{{ name }}", True),
        ("{{ cr.spec.size | default(1) }}", True),
        ("{{- cr.spec.replicas -}}", True),
        ("{{ '{{' }}", True),
        ("{{ image }}", True),  # a param
        ("{{ $labels.instance }}", False),
        ("{{ .Values.x }}", False),
        ("{{ end }}", False),
        ("{{ range .Items }}", False),
        ('{{ printf "%s" .X }}', False),
        ("{{ eq(a, b) }}", False),
        ("{{ }}", False),
    ],
)
def test_an_okt_expression_is_one_jinja2_reads_reading_no_word_of_go_templates(
    candidate: str, expression: bool
) -> None:
    assert manifest.is_expression(candidate) is expression


@pytest.mark.parametrize(("length", "noqa"), [(80, False), (88, False), (89, True)])
def test_a_template_line_longer_than_the_ruff_line_length_gets_a_noqa(
    length: int, noqa: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    prefix = "  key: "
    text = BASE + "metadata:\n  name: a\ndata:\n" + prefix + "v" * (length - len(prefix)) + "\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=text)
    source = (tmp_path / "resources" / "config_map_memcached_gen.py").read_text()
    assert ('"""  # noqa: E501, RUF100\n' in source) is noqa


@pytest.mark.parametrize(
    "configuration",
    [
        pytest.param(["--isolated"], id="ruff-defaults"),
        pytest.param(["--config", str(HERE.parents[2] / "pyproject.toml")], id="repository-configuration"),
    ],
)
def test_a_wrapper_with_a_template_line_longer_than_any_line_length_passes_ruff(
    configuration: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ruff's default rules leave E501 out but report a noqa that names it as unused (RUF100).
    monkeypatch.chdir(tmp_path)
    text = BASE + "metadata:\n  name: a\ndata:\n  key: " + "word " * 40 + "end\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=text)
    result = run_ruff("check", *configuration, "resources")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_wrappers_of_every_kind_pass_ruff_default_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No ruff configuration governs the output: the default line length (88) sorts and wraps its imports.
    monkeypatch.chdir(tmp_path)
    for kind in KINDS:
        generate_in(tmp_path, kind)
    result = run_ruff("check", "--isolated", "resources")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check", "--select", "E501"], id="line-length"),
        pytest.param(["format", "--check"], id="format"),
    ],
)
def test_the_lines_the_generator_writes_keep_to_88_columns(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for kind in KINDS:
        generate_in(tmp_path, kind)
    result = run_ruff(*command, "--isolated", "resources")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check", "--select", "E501"], id="line-length"),
        pytest.param(["format", "--check"], id="format"),
    ],
)
def test_the_lines_the_generator_writes_keep_to_the_79_columns_of_pep_8(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Docstring lines of 80 to 82 columns that no name makes longer, a class docstring naming its API group at 4
    # columns, and the longest examples of the dictionary were written whole.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 79\n")
    for kind in KINDS:
        generate_in(tmp_path, kind)

    result = run_ruff(*command, "resources")

    assert result.returncode == 0, result.stdout + result.stderr


STORAGE_CLASS_KIND = """\
kinds:
  StorageClass:
    apiVersion: storage.k8s.io/v1
    plural: storageclasses
    namespaced: false
    base: MutableResource
    hashed: [provisioner, parameters, reclaimPolicy, mountOptions, allowVolumeExpansion, volumeBindingMode]
"""

STORAGE_CLASS = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: kubernetes.io/no-provisioner
"""


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check", "--select", "E501"], id="line-length"),
        pytest.param(["format", "--check"], id="format"),
    ],
)
def test_the_lines_written_for_a_kind_of_a_dictionary_file_keep_to_88_columns(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kind without an example shows the default one (91 columns at 8 of indentation, past the 78 characters the
    # dictionary allows an example), and its hashed fields may make HASHED_FIELDS longer than a line: both were
    # written whole.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "extra.yaml").write_text(STORAGE_CLASS_KIND)
    generate_in(tmp_path, "StorageClass", STORAGE_CLASS, dictionary_files=[Path("extra.yaml")])

    result = run_ruff(*command, "--isolated", "resources")

    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("all:\n\t$(MAKE) -C src\n", id="tab-indented-makefile"),
        pytest.param("a\u200bb\n", id="zero-width-space"),
    ],
)
def test_a_template_character_ruff_refuses_unescaped_is_escaped(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = BASE + "metadata:\n  name: a\ndata:\n  file: |\n" + textwrap.indent(value, "    ")
    generate_in(tmp_path, "ConfigMap", manifest_text=text)
    source = (tmp_path / "resources" / "config_map_memcached_gen.py").read_text(encoding="utf-8")

    result = run_ruff("check", "--config", str(HERE.parents[2] / "pyproject.toml"), "resources")

    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(manifest.neutralized(template_of(source)))["data"] == {"file": value}


@pytest.mark.parametrize(
    "configuration",
    [
        pytest.param(["--isolated"], id="ruff-defaults"),
        pytest.param(["--config", str(HERE.parents[2] / "pyproject.toml")], id="repository-configuration"),
    ],
)
def test_a_wrapper_whose_template_holds_non_ascii_text_passes_ruff(
    configuration: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An en dash, a typographic apostrophe and Cyrillic letters are "ambiguous" to ruff (RUF001).
    monkeypatch.chdir(tmp_path)
    text = BASE + "metadata:\n  name: a\ndata:\n  greeting: l\u2019\u00e9t\u00e9 \u2013 \u043b\u0435\u0442\u043e\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=text)

    result = run_ruff("check", *configuration, "resources")

    assert result.returncode == 0, result.stdout + result.stderr


def test_a_template_line_of_wide_characters_is_measured_in_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 50 CJK characters take 100 columns, past the 88 of ruff's default line length.
    monkeypatch.chdir(tmp_path)
    text = BASE + "metadata:\n  name: a\ndata:\n  greeting: " + "\u6b22\u8fce" * 25 + "\n"
    generate_in(tmp_path, "ConfigMap", manifest_text=text)

    result = run_ruff("check", "--isolated", "--extend-select", "E501", "resources")

    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("ending", "comments"),
    [
        pytest.param("---\n# end of the file\n", "# end of the file\n", id="marker-then-comment"),
        pytest.param("---\n\n# one\n\n# two\n---\n", "\n# one\n\n# two\n", id="markers-around-comments"),
        pytest.param("...\n# end of the file\n", "# end of the file\n", id="document-end-then-comment"),
    ],
)
def test_a_document_marker_followed_only_by_comments_leaves_a_template_of_one_document(
    ending: str, comments: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, "ConfigMap", manifest_text=BASE + "metadata:\n  name: a\ndata:\n  k: v\n" + ending)
    template = template_of((tmp_path / "resources" / "config_map_memcached_gen.py").read_text())

    rendered = templating.render_template(template, {"cr": None, "name": "n", "namespace": "ns"})

    assert rendered["data"] == {"k": "v"}
    assert template.endswith("  k: v\n" + comments)


@pytest.mark.parametrize(
    ("line", "value"),
    [
        pytest.param('  k: "a\u2028b"\n', "a\u2028b", id="line-separator-in-a-quoted-value"),
        pytest.param("  k: a\u00a0\n", "a\u00a0", id="no-break-space-ending-a-plain-value"),
    ],
)
def test_a_unicode_space_or_line_separator_of_a_value_reaches_the_template_unchanged(
    line: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert yaml.safe_load(BASE + "data:\n" + line)["data"] == {"k": value}
    generate_in(tmp_path, "ConfigMap", manifest_text=BASE + "metadata:\n  name: a\ndata:\n" + line)
    template = template_of((tmp_path / "resources" / "config_map_memcached_gen.py").read_text(encoding="utf-8"))

    rendered = templating.render_template(template, {"cr": None, "name": "n", "namespace": "ns"})

    assert rendered["data"] == {"k": value}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({}, 88, id="no-configuration"),
        pytest.param({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, 100, id="pyproject"),
        pytest.param({"pyproject.toml": "[project]\nname = 'x'\n"}, 88, id="pyproject-without-ruff"),
        pytest.param(
            {"ruff.toml": "line-length = 99\n", "pyproject.toml": "[tool.ruff]\nline-length = 100\n"},
            99,
            id="ruff-toml-first",
        ),
        pytest.param({"pyproject.toml": "not toml ["}, 88, id="invalid-toml"),
    ],
)
def test_ruff_line_length_is_read_from_the_closest_configuration(
    files: dict[str, str], expected: int, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name, text in files.items():
        (project / name).write_text(text)
    assert resource.ruff_line_length(project / "operator" / "resources") == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {
                "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
                "project/ruff.toml": 'extend = "../pyproject.toml"\n',
            },
            100,
            id="ruff-toml-extends-pyproject",
        ),
        pytest.param(
            {
                "base.toml": "line-length = 72\n",
                "project/pyproject.toml": '[tool.ruff]\nextend = "../base.toml"\n[tool.ruff.lint]\nselect = ["E"]\n',
            },
            72,
            id="pyproject-extends-ruff-toml",
        ),
        pytest.param(
            {
                "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
                "shared/ruff.toml": 'extend = "../pyproject.toml"\n',
                "project/.ruff.toml": 'extend = "../shared/ruff.toml"\n',
            },
            100,
            id="a-chain",
        ),
        pytest.param(
            {
                "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
                "project/ruff.toml": 'extend = "../pyproject.toml"\nline-length = 79\n',
            },
            79,
            id="its-own-line-length-wins",
        ),
    ],
)
def test_ruff_line_length_follows_extend_as_ruff_does(files: dict[str, str], expected: int, tmp_path: Path) -> None:
    # A configuration that inherits its line length through extend was read as ruff's default: the generated code
    # was laid out for 88 columns in a project whose ruff wants another length.
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    module = tmp_path / "project" / "operator" / "resources" / "module.py"
    module.parent.mkdir(parents=True)
    module.touch()
    shown = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--show-settings", str(module)],
        cwd=module.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert f"linter.line_length = {expected}\n" in shown  # what ruff itself reads
    assert resource.ruff_line_length(module.parent) == expected


def test_an_extend_that_comes_back_to_itself_is_ruffs_default(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ruff.toml").write_text('extend = "../b/ruff.toml"\n')
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "ruff.toml").write_text('extend = "../a/ruff.toml"\n')
    assert resource.ruff_line_length(tmp_path / "a" / "resources") == resource.DEFAULT_LINE_LENGTH


MANY = BASE + "metadata:\n  name: a\n---\n" + BASE + "metadata:\n  name: b\n"


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        pytest.param(
            "ConfigMap", "a: [1,\n", "manifest manifests/config_map.yaml is not valid YAML: ", id="invalid-yaml"
        ),
        pytest.param(
            "ConfigMap",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\n",
            "manifest manifests/config_map.yaml is a Secret, not a ConfigMap: its kind must match --type",
            id="kind-differs-from-type",
        ),
        pytest.param(
            "ConfigMap",
            MANY,
            "manifest manifests/config_map.yaml holds 2 YAML documents: expected exactly one object "
            "(generate one wrapper per manifest)",
            id="several-documents",
        ),
        pytest.param(
            "ConfigMap",
            "# nothing\n",
            "manifest manifests/config_map.yaml is empty: expected one Kubernetes object",
            id="empty",
        ),
        pytest.param(
            "ConfigMap",
            "- a\n- b\n",
            "manifest manifests/config_map.yaml is not a Kubernetes object (expected a mapping at the top level)",
            id="not-a-mapping",
        ),
        pytest.param(
            "ConfigMap",
            "apiVersion: v1\nmetadata:\n  name: a\n",
            "manifest manifests/config_map.yaml has no kind (expected kind: ConfigMap)",
            id="no-kind",
        ),
        pytest.param(
            "PodDisruptionBudget",
            "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: a\n",
            "manifest manifests/pod_disruption_budget.yaml uses apiVersion policy/v1beta1 but the dictionary has "
            "policy/v1 for PodDisruptionBudget: fix the manifest or override the kind with --dictionary FILE",
            id="api-version-differs",
        ),
        pytest.param(
            "ClusterRole",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: a\n  namespace: b\n",
            "manifest manifests/cluster_role.yaml: ClusterRole is cluster-scoped, remove metadata.namespace from the "
            "manifest",
            id="namespace-on-cluster-scoped-kind",
        ),
        pytest.param(
            "ConfigMap",
            BASE + "metadata: {name: a}\ndata:\n  k: '{{ cr.name }}'\n",
            "manifest manifests/config_map.yaml: cannot place the name and namespace placeholders without "
            "reformatting the manifest, which would change its Jinja2 expressions: write metadata as a block "
            "(metadata:, then name: and namespace: on their own lines, with no anchor: write an anchored name's value "
            "at each of its aliases, or {{ name }} where the child's own name is meant)",
            id="flow-metadata-with-expressions",
        ),
    ],
)
def test_invalid_input_is_one_readable_error_line(
    kind: str, text: str | None, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError) as caught:
        generate_in(tmp_path, kind, manifest_text=text)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "resources").exists()


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("Deploymnet", "unknown kind 'Deploymnet' (did you mean: Deployment?)"),
        ("Rolebindng", "unknown kind 'Rolebindng' (did you mean: RoleBinding?)"),
        (
            "Widget",
            "unknown kind 'Widget' (see `okt gen resource --list` for the known kinds, or add it with "
            "--dictionary FILE)",
        ),
    ],
)
def test_unknown_kind_suggests_the_closest_known_kinds(
    kind: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError) as caught:
        generate_in(tmp_path, "Deployment", resource_type=kind)
    assert str(caught.value) == message


def test_unreadable_manifest_is_reported_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError, match=r"^cannot read manifest missing\.yaml: No such file or directory$"):
        resource.generate(
            resource_type="ConfigMap",
            cr_kind="Memcached",
            group="cache",
            version="v1alpha1",
            manifest_path=Path("missing.yaml"),
            out_dir=Path("resources"),
        )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("cr_kind", "my-kind", "invalid --kind 'my-kind': expected a CamelCase kind such as Memcached"),
        ("group", "Cache", "invalid --group 'Cache': expected a lowercase DNS name such as cache"),
        ("version", "1.0", "invalid --version '1.0': expected a Kubernetes version such as v1alpha1"),
    ],
)
def test_invalid_custom_resource_names_are_refused(
    field: str, value: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError) as caught:
        generate_in(tmp_path, "ConfigMap", **{field: value})
    assert str(caught.value) == message


@pytest.mark.parametrize("out", ["my-res", "class", "2nd", "resources.v2", "pkg/my-res"])
def test_an_out_folder_python_cannot_import_as_a_package_is_refused_before_anything_is_written(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError) as caught:
        generate_in(tmp_path, "ConfigMap", out_dir=Path(out))
    folder = Path(out).name
    assert str(caught.value).startswith(f"invalid --out {out!r}: {folder!r} is not a name Python imports a package by")
    assert not (tmp_path / out).exists()


@pytest.mark.parametrize("out", ["wrappers/", "pkg/resources", "."])
def test_an_out_folder_named_as_a_package_is_accepted(
    out: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "operator_pkg").mkdir()
    monkeypatch.chdir(tmp_path / "operator_pkg")  # "." is a folder named operator_pkg
    generate_in(tmp_path / "operator_pkg", "ConfigMap", out_dir=Path(out))
    assert (tmp_path / "operator_pkg" / out / "__init__.py").exists()


def test_generation_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_for("Deployment")
    arguments = {
        "spec": spec,
        "cr_kind": "Memcached",
        "group": "cache",
        "version": "v1alpha1",
        "template": "kind: Deployment\n",
        "command": ["okt", "gen", "resource"],
    }
    assert resource.render(**arguments) == resource.render(**arguments)  # type: ignore[arg-type]


SETTINGS = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  verbosity: '1'\n"
SCRIPTS = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: scripts\ndata:\n  start.sh: exec memcached\n"


def generate_manifest(path: str, text: str | None = None, out: str = "resources") -> list[resource.FileResult]:
    """Generate a ConfigMap wrapper of Memcached from ``path`` (written first when ``text`` is given)."""
    if text is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return resource.generate(
        resource_type="ConfigMap",
        cr_kind="Memcached",
        group="cache",
        version="v1alpha1",
        manifest_path=Path(path),
        out_dir=Path(out),
    )


def test_a_second_manifest_of_the_same_kind_gets_its_own_modules_named_after_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_manifest("manifests/settings.yaml", SETTINGS)
    results = generate_manifest("manifests/scripts.yaml", SCRIPTS)
    assert [(r.path.as_posix(), r.action) for r in results] == [
        ("resources/config_map_memcached_scripts_gen.py", resource.Action.WRITTEN),
        ("resources/config_map_memcached_scripts.py", resource.Action.CREATED),
    ]
    first = Path("resources/config_map_memcached_gen.py").read_text(encoding="utf-8")
    second = Path("resources/config_map_memcached_scripts_gen.py").read_text(encoding="utf-8")
    assert "verbosity" in template_of(first)
    assert "start.sh" in template_of(second)
    assert "class ConfigMapMemcachedScriptsBase(okt.MutableResource):" in second
    user = Path("resources/config_map_memcached_scripts.py").read_text(encoding="utf-8")
    assert "class ConfigMapMemcachedScripts(ConfigMapMemcachedScriptsBase):" in user


def test_regenerating_each_manifest_rewrites_its_own_wrapper_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_manifest("manifests/settings.yaml", SETTINGS)
    generate_manifest("manifests/scripts.yaml", SCRIPTS)
    again = generate_manifest("manifests/scripts.yaml", SCRIPTS.replace("exec memcached", "exec memcached -v"))
    generate_manifest("manifests/settings.yaml", SETTINGS.replace("'1'", "'2'"))
    assert [(r.path.name, r.action) for r in again] == [
        ("config_map_memcached_scripts_gen.py", resource.Action.WRITTEN),
        ("config_map_memcached_scripts.py", resource.Action.KEPT),
    ]
    assert "verbosity: '2'" in template_of(Path("resources/config_map_memcached_gen.py").read_text(encoding="utf-8"))
    scripts = template_of(Path("resources/config_map_memcached_scripts_gen.py").read_text(encoding="utf-8"))
    assert "exec memcached -v" in scripts
    assert sorted(path.name for path in Path("resources").iterdir()) == [
        "__init__.py",
        "config_map_memcached.py",
        "config_map_memcached_gen.py",
        "config_map_memcached_scripts.py",
        "config_map_memcached_scripts_gen.py",
    ]


def test_a_manifest_regenerated_from_another_directory_still_rewrites_its_own_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_manifest("operator/manifests/settings.yaml", SETTINGS, out="operator/resources")
    generate_manifest("operator/manifests/scripts.yaml", SCRIPTS, out="operator/resources")
    monkeypatch.chdir(tmp_path / "operator")
    results = generate_manifest("./manifests/settings.yaml", out="resources")
    assert [r.path.name for r in results] == ["config_map_memcached_gen.py", "config_map_memcached.py"]
    assert "verbosity" in template_of(Path("resources/config_map_memcached_gen.py").read_text(encoding="utf-8"))


def test_a_second_manifest_keeps_its_names_when_the_generated_modules_are_regenerated_in_another_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_manifest("manifests/settings.yaml", SETTINGS)
    generate_manifest("manifests/scripts.yaml", SCRIPTS)
    for generated in Path("resources").glob("*_gen.py"):
        generated.unlink()
    generate_manifest("manifests/scripts.yaml")
    generate_manifest("manifests/settings.yaml")
    assert "verbosity" in template_of(Path("resources/config_map_memcached_gen.py").read_text(encoding="utf-8"))
    assert "start.sh" in template_of(Path("resources/config_map_memcached_scripts_gen.py").read_text(encoding="utf-8"))


def test_a_manifest_whose_wrapper_names_are_both_taken_is_refused_naming_the_manifests_that_hold_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    generate_manifest("manifests/settings.yaml", SETTINGS)
    generate_manifest("manifests/scripts.yaml", SCRIPTS)
    before = {path.name: path.read_bytes() for path in Path("resources").iterdir()}
    with pytest.raises(errors.CodegenError) as refused:
        generate_manifest("manifests/extra/scripts.yaml", SCRIPTS)
    message = str(refused.value)
    assert "\n" not in message
    assert "manifests/settings.yaml" in message
    assert "manifests/scripts.yaml" in message
    assert "rename manifests/extra/scripts.yaml" in message
    assert "--out" in message
    assert {path.name: path.read_bytes() for path in Path("resources").iterdir()} == before


@pytest.mark.parametrize(
    ("cr_kind", "manifests"),
    [
        pytest.param("MemcachedClusterOfTheRegionalEdge", ["hpa.yaml"], id="long-custom-resource-kind"),
        pytest.param("Memcached", ["hpa.yaml", "hpa-of-the-regional-edge-cluster.yaml"], id="long-manifest-file-name"),
    ],
)
def test_a_wrapper_whose_class_line_is_longer_than_the_line_length_passes_ruff_format(
    cr_kind: str, manifests: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "manifests").mkdir()
    for name in manifests:
        shutil.copyfile(MANIFESTS / "horizontal_pod_autoscaler.yaml", tmp_path / "manifests" / name)
        generate_in(tmp_path, "HorizontalPodAutoscaler", manifest_path=Path("manifests") / name, cr_kind=cr_kind)
    result = run_ruff("format", "--check", "--isolated", "resources")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("cr_kind", "group"),
    [
        pytest.param("MemcachedClusterOfTheRegionalEdge", "cache", id="long-custom-resource-kind"),
        pytest.param("Memcached", "platform-engineering.regional-edge.example.com", id="long-group"),
    ],
)
def test_the_docstrings_of_a_wrapper_with_long_names_keep_to_the_line_length(
    cr_kind: str, group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The class docstring names the custom resource kind at 4 columns, the module docstrings its group too.
    monkeypatch.chdir(tmp_path)
    generate_in(tmp_path, "HorizontalPodAutoscaler", cr_kind=cr_kind, group=group)

    checked = run_ruff("check", "--isolated", "--extend-select", "E501", "resources")
    formatted = run_ruff("format", "--check", "--isolated", "resources")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "---\n# the settings\n\n" + BASE + "metadata: [a\n",
            "manifest manifests/config_map.yaml is not valid YAML: expected ',' or ']', but got '<stream end>' "
            "(line 7, column 1)",
            id="yaml",
        ),
    ],
)
def test_a_line_named_in_an_error_is_the_files_own_after_leading_markers_and_blank_lines(
    text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The leading "---" and blank lines, trimmed from the template, were left out of the count: the line named was
    # another, earlier one of the file.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.CodegenError) as caught:
        generate_in(tmp_path, "ConfigMap", manifest_text=text)
    assert str(caught.value).startswith(message), str(caught.value)
