"""``docs/guide/webhooks.md``'s "Trying it locally" against the real API server: its commands, run as written on a
cluster that has never seen the operator's kind, leave ``okt run`` serving and the API server refusing a bad spec
through its webhook.

The block is run by ``bash`` with the page's ``okt`` and ``kubectl``, in a folder holding an operator as
``main.py`` (a kind of its own, with a validator, a second version and its converters); only the ports (the
webhooks', and the probes' the page leaves at their default) and the CA file's path are made this test's own.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

import okt
from okt.codegen import crd, webhooks
from okt.kube import kinds
from okt.runtime import manager as manager_mod
from okt.runtime import webhook_server
from okt.testing import envtest, kubectl, wait_for

pytestmark = pytest.mark.integration

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "webhooks.md"
GROUP = f"local{secrets.token_hex(3)}.okt.example.com"
OPERATOR = f'''
import pydantic
import okt


class GizmoSpecV1(pydantic.BaseModel):
    imageName: str


class GizmoSpec(pydantic.BaseModel):
    image: str

    @pydantic.field_validator("image")
    @classmethod
    def tagged(cls, image: str) -> str:
        if ":" not in image:
            raise ValueError("an image needs a tag")
        return image


class Gizmos(okt.Reconciler):
    api_version = "{GROUP}/v2"
    kind = "Gizmo"
    spec_model = GizmoSpec
    spec_models = {{"v1": GizmoSpecV1}}
    converters = {{
        ("v1", "v2"): lambda spec: GizmoSpec(image=spec.imageName),
        ("v2", "v1"): lambda spec: GizmoSpecV1(imageName=spec.image),
    }}
'''
CONFIGURATIONS = tuple(
    kinds.Kind("admissionregistration.k8s.io/v1", f"{kind}WebhookConfiguration", plural, namespaced=False)
    for kind, plural in (
        ("Validating", "validatingwebhookconfigurations"),
        ("Mutating", "mutatingwebhookconfigurations"),
    )
)
CRD = kinds.Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False)


def _block(page: str) -> str:
    match = re.search(r"## Trying it locally\n\n```sh\n(.*?)\n```", page, re.DOTALL)
    assert match, "the page lost its Trying it locally block"
    return match.group(1)


@pytest.fixture
def cleanup(kube: okt.Client) -> Iterator[None]:
    """The cluster-wide objects the block creates, deleted whatever the test did (the configurations first)."""
    yield
    for kind in CONFIGURATIONS:
        with contextlib.suppress(okt.NotFound):
            kube.delete(kind, "gizmo-operator")
    with contextlib.suppress(okt.NotFound):
        kube.delete(CRD, f"gizmos.{GROUP}")


def test_trying_it_locally_leaves_okt_run_serving_and_a_bad_spec_refused_on_a_new_cluster(
    kube: okt.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    cleanup: None,
) -> None:
    (tmp_path / "main.py").write_text(textwrap.dedent(OPERATOR))
    ca_file, crd_file, pid_file = tmp_path / "ca.crt", tmp_path / "crd.yaml", tmp_path / "okt.pid"
    port, probes = envtest.free_ports(2)
    script = (
        _block(PAGE.read_text())
        .replace("/tmp/okt-ca.crt", str(ca_file))
        .replace("/tmp/okt-crd.yaml", str(crd_file))
        .replace("9443", str(port))
        .replace("okt run main.py", f"okt run main.py --metrics-bind-address 127.0.0.1:{probes}")
    )
    assert str(port) in script and str(probes) in script, script
    # The operator left running in the background is this test's to stop: its process id, as the shell knows it.
    script += f"\necho $! > {pid_file}\n"
    env = _environment(control_plane)
    log = (tmp_path / "operator.log").open("wb")
    try:
        ran = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, (tmp_path / "operator.log").read_text()
        gizmo = kinds.Kind(f"{GROUP}/v2", "Gizmo", "gizmos")
        okt_run = int(pid_file.read_text())

        def refused() -> str | None:
            assert not _gone(okt_run), f"okt run stopped: {(tmp_path / 'operator.log').read_text()[-2000:]}"
            obj = {
                "apiVersion": gizmo.api_version,
                "kind": "Gizmo",
                "metadata": {"name": f"g-{secrets.token_hex(3)}", "namespace": namespace},
                "spec": {"image": "memcached"},
            }
            try:
                kube.create(obj, gizmo)
            except okt.Invalid as exc:
                return exc.api_message
            except okt.ApiError:
                return None  # the webhook not called yet (its configuration, the CA): asked again
            kube.delete(gizmo, obj["metadata"]["name"], namespace)
            return None

        said = wait_for(refused, timeout=60, message="the webhook refusing an untagged image")
        assert "spec.image: Value error, an image needs a tag" in said
        assert not _gone(okt_run)
    finally:
        if pid_file.exists() and pid_file.read_text().strip():
            _stop(int(pid_file.read_text()))
        log.close()


def _environment(control_plane: envtest.ControlPlane) -> dict[str, str]:
    """The page's shell: this environment's ``okt``, ``kubectl``, and the control plane as the current cluster."""
    python_bin = str(pathlib.Path(sys.executable).parent)
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not installed"
    return {
        **os.environ,
        "KUBECONFIG": str(control_plane.kubeconfig),
        "PATH": os.pathsep.join([python_bin, str(pathlib.Path(kubectl).parent), os.environ.get("PATH", "")]),
    }


def _gone(pid: int) -> bool:
    """Whether the operator the block left running has ended (no child of this process: its shell is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: _gone(pid), timeout=40, message="the operator stopped")


def _python_blocks(page: str, section: str) -> list[str]:
    body = page.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)\n```", body, re.DOTALL)


def _with_defaults(validation: str, defaults: str) -> str:
    """The page's validation example with what its Defaults example adds to each of its classes (their ``...`` is
    the validation example's body)."""
    module = ast.parse(validation)
    classes = {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}
    for node in ast.parse(defaults).body:
        assert isinstance(node, ast.ClassDef) and node.name in classes, ast.unparse(node)
        added = [
            statement
            for statement in node.body
            if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        ]
        classes[node.name].body.extend(added)
    return ast.unparse(module)


@contextlib.contextmanager
def page_operator(
    kube: okt.Client, apply_crd: Any, namespace: str, *sections: str
) -> Iterator[tuple[type[okt.Reconciler], kinds.Kind]]:
    """The page's validation example, with what each example of ``sections`` adds to its class, run under a
    kind of its own with its webhooks configured (the configurations reach the API server a moment later)."""
    page = PAGE.read_text()
    group = f"docs{secrets.token_hex(3)}.okt.example.com"
    source = _python_blocks(page, "Validation for free")[0]
    for section in sections:
        for block in _python_blocks(page, section):
            source = _with_defaults(source, block)
    scope: dict[str, Any] = {}
    exec(compile(source.replace("cache.example.com", group), "webhooks.md", "exec"), scope)  # the page's own code
    reconciler = scope["MemcachedReconciler"]
    kind = apply_crd(crd.crd_for_reconciler(reconciler))
    manager = manager_mod.Manager(
        kube,
        [reconciler],
        namespaces=[namespace],
        metrics_bind="0",
        grace_period=5,
        webhooks=webhook_server.Options(host="127.0.0.1", port=0),
    )
    manager.start()
    installed: list[tuple[kinds.Kind, str]] = []
    try:
        server = manager.webhook_server
        assert server is not None
        for document in webhooks.webhooks_for_reconcilers(
            [reconciler],
            name=f"memcached-{secrets.token_hex(3)}",
            client_config=webhooks.ClientConfig(url=server.url(), ca_bundle=server.ca_bundle),
        ):
            configuration = next(c for c in CONFIGURATIONS if c.kind == document["kind"])
            kube.create(document, configuration)
            installed.append((configuration, document["metadata"]["name"]))
        yield reconciler, kind
    finally:
        for configuration, name in installed:
            kube.delete(configuration, name)
        manager.stop()
        manager.join(10)


def memcached(kind: kinds.Kind, namespace: str, image: str = "memcached:1.6") -> dict[str, Any]:
    return {
        "apiVersion": kind.api_version,
        "kind": "Memcached",
        "metadata": {"name": f"m-{secrets.token_hex(3)}", "namespace": namespace},
        "spec": {"size": 1, "image": image},
    }


def defaulted(kube: okt.Client, kind: kinds.Kind, namespace: str) -> dict[str, Any] | None:
    """A Memcached created as the API server stores it, once the page's ``default()`` is called (else None)."""
    obj = memcached(kind, namespace)
    kube.create(obj, kind)
    stored: dict[str, Any] = kube.get(kind, obj["metadata"]["name"], namespace)
    return stored if "displayName" in stored["spec"] else None  # the configuration not called yet


def test_the_defaults_example_fills_in_a_field_the_stored_object_keeps(
    kube: okt.Client, apply_crd: Any, namespace: str
) -> None:
    with page_operator(kube, apply_crd, namespace, "Defaults") as (_, kind):
        stored = wait_for(
            lambda: defaulted(kube, kind, namespace),
            timeout=30,
            message="a Memcached defaulted by the page's default()",
        )
        assert stored["spec"]["displayName"] == f"memcached {stored['metadata']['name']}"


def test_the_warnings_examples_are_printed_by_kubectl_for_the_objects_they_name(
    kube: okt.Client, control_plane: envtest.ControlPlane, apply_crd: Any, namespace: str, tmp_path: pathlib.Path
) -> None:
    section = "Warnings, dry runs and the requesting user"
    page = PAGE.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    (printed,) = re.findall(r"\nWarning: (.*)\n", page)
    with page_operator(kube, apply_crd, namespace, "Defaults", section) as (reconciler, kind):
        assert "admission" in inspect.signature(reconciler.default).parameters
        wait_for(lambda: defaulted(kube, kind, namespace), timeout=30, message="the page's webhooks in use")

        said = {}
        for image in ("memcached:latest", "memcached:1.5.22", "memcached:1.6"):
            manifest = tmp_path / "memcached.json"
            manifest.write_text(json.dumps(memcached(kind, namespace, image)))
            applied = kubectl.kubectl(control_plane.kubeconfig, "apply", "-f", str(manifest))
            assert applied.returncode == 0, applied.stderr
            said[image] = re.findall(r"^Warning: (.*)$", applied.stderr, re.M)

    assert said == {
        "memcached:latest": [printed],
        "memcached:1.5.22": ["spec.image: memcached 1.5 is no longer supported, use 1.6"],
        "memcached:1.6": [],
    }


def past_the_quota(kind: kinds.Kind, namespace: str) -> dict[str, Any]:
    return {**memcached(kind, namespace), "spec": {"size": 6, "image": "memcached:1.6"}}


def refused_past_the_quota(kube: okt.Client, kind: kinds.Kind, namespace: str) -> okt.ApiError | None:
    """What the API server answers a create of a Memcached past the page's quota (None: admitted, the configuration
    not called yet; the object is deleted again)."""
    obj = past_the_quota(kind, namespace)
    try:
        kube.create(obj, kind)
    except okt.ApiError as exc:
        return exc
    kube.delete(kind, obj["metadata"]["name"], namespace)
    return None


def test_the_refusal_code_example_is_the_refusal_kubectl_prints(
    kube: okt.Client, control_plane: envtest.ControlPlane, apply_crd: Any, namespace: str, tmp_path: pathlib.Path
) -> None:
    section = "A refusal's code of your own"
    page = PAGE.read_text().split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    (printed,) = re.findall(r'\nError from server \((\w+)\): error when creating "memcached.yaml": (.*)\n', page)
    with page_operator(kube, apply_crd, namespace, section) as (_, kind):
        refused = wait_for(
            lambda: refused_past_the_quota(kube, kind, namespace), timeout=30, message="the page's webhook in use"
        )
        manifest = tmp_path / "memcached.yaml"
        manifest.write_text(json.dumps(past_the_quota(kind, namespace)))
        applied = kubectl.kubectl(control_plane.kubeconfig, "apply", "-f", str(manifest))

    assert isinstance(refused, okt.TooManyRequests)
    assert (refused.status, refused.api_reason) == (429, "TooManyRequests")
    said = re.findall(r'^Error from server \((\w+)\): error when creating "[^"]*": (.*)$', applied.stderr, re.M)
    assert said == [(printed[0], printed[1].replace("cache.example.com", kind.group))]


def test_trying_it_locally_ends_when_okt_run_cannot_start_and_configures_nothing(
    kube: okt.Client,
    control_plane: envtest.ControlPlane,
    tmp_path: pathlib.Path,
    cleanup: None,
) -> None:
    # An earlier okt run still holds the port: this one stops at once, and the block must not wait for ever for a
    # CA file it will never write, nor configure the webhooks with anything.
    (tmp_path / "main.py").write_text(textwrap.dedent(OPERATOR))
    ca_file, crd_file = tmp_path / "ca.crt", tmp_path / "crd.yaml"
    (probes,) = envtest.free_ports(1)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        script = (
            _block(PAGE.read_text())
            .replace("/tmp/okt-ca.crt", str(ca_file))
            .replace("/tmp/okt-crd.yaml", str(crd_file))
            .replace("9443", str(port))
            .replace("okt run main.py", f"okt run main.py --metrics-bind-address 127.0.0.1:{probes}")
        )
        try:
            ran = subprocess.run(
                ["bash", "-e", "-c", script],
                cwd=tmp_path,
                env=_environment(control_plane),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"the block still waits for the CA file: {exc.stderr!r}") from None
    assert ran.returncode != 0
    assert f"cannot serve webhooks on 127.0.0.1:{port}: Address already in use" in ran.stderr
    assert f"cannot read {ca_file}" in ran.stderr
    assert not ca_file.exists()
    for kind in CONFIGURATIONS:
        assert kube.get_or_none(kind, "gizmo-operator") is None
