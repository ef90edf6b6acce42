"""``okt gen resource`` as an author meets it: a manifest, the generated wrapper, and the child a real API server keeps.

Each test writes a manifest, generates its wrapper with the generator behind ``okt gen resource``, imports it as the
author's operator would, and reconciles a Widget owning that child. The child the API server stores must hold what
the manifest says, as ``kubectl apply`` of the same manifest would store it; regenerating after the manifest changed
rewrites the generated module, keeps the author's, and the field dropped from the manifest leaves the child.
"""

from __future__ import annotations

import importlib
import itertools
import pathlib
import sys
from typing import Any

import pytest

import okt
from okt.codegen import resource
from okt.kube import client as kube_client
from okt.kube import kinds
from tests.integration.reconciler import conftest as shared

pytestmark = pytest.mark.integration

widget_kind = shared.widget_kind

NAME = "generated"
_packages = itertools.count()


def generate(tmp_path: pathlib.Path, manifest: str, *, out: pathlib.Path | None = None) -> pathlib.Path:
    """The manifest written to ``tmp_path`` and its ConfigMap wrapper generated into a package of its own."""
    path = tmp_path / "configmap.yaml"
    path.write_text(manifest, encoding="utf-8")
    out = out or tmp_path / f"generated_{next(_packages)}"
    resource.generate(
        resource_type="ConfigMap", cr_kind="Widget", group=shared.GROUP, version="v1", manifest_path=path, out_dir=out
    )
    return out


def wrapper(package: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> type[okt.MutableResource]:
    monkeypatch.syspath_prepend(str(package.parent))
    importlib.invalidate_caches()
    module = importlib.import_module(f"{package.name}.config_map_widget")
    cls: type[okt.MutableResource] = module.ConfigMapWidget
    return cls


def reconcile(
    cls: type[okt.MutableResource], kube: kube_client.Client, kind: kinds.Kind, namespace: str
) -> dict[str, Any]:
    """One reconcile of the Widget owning one child of ``cls``; the child as the API server keeps it."""

    class GeneratedReconciler(shared.WidgetReconciler):
        owns = (cls,)

        def resources(self, ctx: okt.Context) -> list[okt.Resource]:
            return [cls(ctx.cr)]

    run = shared.reconcile_widget(GeneratedReconciler(), kube, kind, namespace, NAME)
    assert run.outcome == okt.Outcome.done(), run
    live = shared.get_child(kube, "v1", "ConfigMap", namespace, NAME)
    assert live is not None
    return live


def test_a_date_or_a_time_left_unquoted_in_the_manifest_is_its_text_in_the_child_as_kubectl_sends_it(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    # kubectl reads a plain scalar that looks like a date or a time of day as the string it is, and the API server keeps
    # it. PyYAML read a date, which no JSON body holds, and a number of seconds, which no ConfigMap holds.
    package = generate(
        tmp_path,
        """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    example.com/released: 2024-05-01
data:
  since: 2024-05-01T10:00:00Z
  spaced: 2001-12-14 21:59:43.10 -5
  backup-at: 12:30
""",
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["metadata"]["annotations"]["example.com/released"] == "2024-05-01"
    assert live["data"] == {
        "since": "2024-05-01T10:00:00Z",
        "spaced": "2001-12-14 21:59:43.10 -5",
        "backup-at": "12:30",
    }


ALERTING = """\
groups:
- name: node
  rules:
  - alert: NodeDown
    annotations:
      summary: "Instance {{ $labels.instance }} of {{ $labels.job }} is down ({{ $value | humanize }})"
"""
ALERTMANAGER = """\
{{ define "slack.title" }}{{ range .Alerts }}{{ .Labels.severity }} {{ end }}{{ end }}
{{/* a Go comment */}}{{- if eq .Status "firing" -}}fire{{- else -}}ok{{- end }}
"""
ANSIBLE_LIKE = "{% if enabled %}on{% endif %} {# a note #} ${#NAME}\n"


def test_template_text_of_the_manifest_that_is_not_okts_reaches_the_child_as_written(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    # An alerting rule's {{ $labels.instance }} was refused by the generator (not a Jinja2 expression); a Go
    # template's {{ range .Alerts }} or {{ end }}, and {% if %}, ran as Jinja2 on every render.
    package = generate(
        tmp_path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules\ndata:\n"
        "  size: 'size {{ cr.spec.size }}'\n"
        "  rules.yaml: |\n"
        + "".join(f"    {line}\n" for line in ALERTING.splitlines())
        + "  slack.tmpl: |\n"
        + "".join(f"    {line}\n" for line in ALERTMANAGER.splitlines())
        + "  other.j2: |\n"
        + "".join(f"    {line}\n" for line in ANSIBLE_LIKE.splitlines())
        + "  inline: Instance {{ $labels.instance }} down\n",
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=3)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["data"] == {
        "size": "size 3",
        "rules.yaml": ALERTING,
        "slack.tmpl": ALERTMANAGER,
        "other.j2": ANSIBLE_LIKE,
        "inline": "Instance {{ $labels.instance }} down",
    }


def test_an_anchored_name_of_the_manifest_is_its_value_at_each_alias_in_the_child(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    # kubectl applies it; the generator refused it as YAML that is not valid ("found undefined alias 'app'").
    package = generate(
        tmp_path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: &app web\n  labels:\n    app: *app\n"
        "data:\n  owner: *app\n",
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["metadata"]["name"] == NAME
    assert live["metadata"]["labels"]["app"] == "web"
    assert live["data"] == {"owner": "web"}


def test_a_plain_scalar_of_the_manifest_is_what_kubectl_sends_for_it(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    # kubectl sends `immutable: n` as false (go-yaml reads y and n as booleans); PyYAML read the text "n", which the
    # API server refuses where a boolean goes.
    package = generate(
        tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flags\nimmutable: n\ndata:\n  a: b\n"
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live.get("immutable", False) is False
    assert live["data"] == {"a": "b"}


def test_a_block_scalar_of_the_manifest_is_its_value_in_the_child_trailing_blanks_and_kept_lines_included(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    # Markdown ends a line with two spaces for a line break; "|+" keeps the blank lines that end a value.
    package = generate(
        tmp_path,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n"
        "  readme.md: |\n    first line  \n    second line\t\n  tail: |+\n    kept\n\n\n",
    )
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["data"] == {"readme.md": "first line  \nsecond line\t\n", "tail": "kept\n\n\n"}


def test_regenerating_after_a_key_left_the_manifest_keeps_the_authors_module_and_the_key_leaves_the_child(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kube: kube_client.Client,
    widget_kind: kinds.Kind,
    namespace: str,
) -> None:
    first = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  kept: a\n  dropped: b\n"
    package = generate(tmp_path, first)
    user_module = package / "config_map_widget.py"
    example = "        # For example:\n"
    mutation = '        self.desired["data"]["greeting"] = cr.spec.greeting\n'
    edited = user_module.read_text(encoding="utf-8").replace(example, mutation + example)
    user_module.write_text(edited, encoding="utf-8")
    shared.make_widget(kube, widget_kind, namespace, NAME, size=1, greeting="hi")
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["data"] == {"kept": "a", "dropped": "b", "greeting": "hi"}

    (tmp_path / "configmap.yaml").write_text(first.replace("  dropped: b\n", ""), encoding="utf-8")
    results = resource.generate(
        resource_type="ConfigMap",
        cr_kind="Widget",
        group=shared.GROUP,
        version="v1",
        manifest_path=tmp_path / "configmap.yaml",
        out_dir=package,
    )
    assert [(r.path.name, r.action) for r in results] == [
        ("config_map_widget_gen.py", resource.Action.WRITTEN),
        ("config_map_widget.py", resource.Action.KEPT),
    ]
    assert user_module.read_text(encoding="utf-8") == edited
    for module in [name for name in sys.modules if name.startswith(f"{package.name}.")]:
        monkeypatch.delitem(sys.modules, module)
    live = reconcile(wrapper(package, monkeypatch), kube, widget_kind, namespace)
    assert live["data"] == {"kept": "a", "greeting": "hi"}
