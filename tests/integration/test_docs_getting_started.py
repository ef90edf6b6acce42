"""The cluster steps of ``docs/getting-started.md``, run against the real local control plane.

The unit walk (``tests/unit/test_docs_snippets.py``) builds the reader's project from the page; this test builds it
the same way, then runs every ``<!-- snippet: cluster -->`` block in page order. There is no ``kubectl`` on these
machines, so each command the page uses is carried out with okt's client, doing what kubectl would (the unit tests
fail on any command not handled here):

==========================================  =======================================================================
``okt envtest start`` / ``stop``            the session's control plane stands for the one the page starts; ``stop``
                                            stops the operator, which must exit cleanly
``export KUBECONFIG=$(...)``                the control plane's kubeconfig, for the operator process
``kubectl apply -f F``                      ``apply_crd`` for a CRD, a create in the test namespace otherwise
``okt run main.py --namespace default``     the real ``okt run`` in a subprocess, in the project folder, watching the
                                            test namespace (the page's ``default``), metrics on a free port, with
                                            ``-v`` (the reconciles that find nothing to do log at debug level)
``kubectl wait --for=condition=C[=false]``  wait until the object's condition C is True (False)
``kubectl wait --for=jsonpath=...=V``       wait until the field holds V
``kubectl get T/N ...``                     each object exists
``kubectl patch T N --type merge -p J``     the same merge patch
``kubectl describe T N``                    the object and its events, checked against what the page says
``python -m pytest tests/``                 the real command, in the project folder: a pytest session of its own,
                                            with its own control plane from okt's plugin
==========================================  =======================================================================

The page's CRD is ``memcacheds.cache.example.com``, the sample operator's group and kind with the same spec fields, so
replacing the sample's CRD within one session changes nothing the sample relies on.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
import yaml

import okt
from okt.kube import kinds
from okt.testing import ControlPlane, OperatorProcess, wait_for

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
_SNIPPETS = ROOT / "tests" / "unit" / "test_docs_snippets.py"


def _load_page_tools() -> ModuleType:
    """The page's parser and offline walk live with the unit tests; load that module by path."""
    spec = importlib.util.spec_from_file_location("okt_docs_snippets", _SNIPPETS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


snippets = _load_page_tools()

SHORT_KINDS = {
    "configmap": ("v1", "ConfigMap"),
    "service": ("v1", "Service"),
    "deployment": ("apps/v1", "Deployment"),
    "memcached": ("cache.example.com/v1alpha1", "Memcached"),
}


class Reader:
    """Carries out the page's cluster commands for one test (see the module docstring)."""

    def __init__(
        self,
        kube: okt.Client,
        plane: ControlPlane,
        apply_crd: Callable[[dict[str, Any]], okt.Kind],
        namespace: str,
        project: pathlib.Path,
    ) -> None:
        self.kube = kube
        self.plane = plane
        self.apply_crd = apply_crd
        self.namespace = namespace
        self.project = project
        self.env = dict(os.environ)
        self.operator: OperatorProcess | None = None
        self.operator_log = project / "okt-run.log"
        self.operator_exit: int | None = None
        self.page_tests_summary = ""

    # -- helpers --------------------------------------------------------------------------------------------------

    def kind(self, short: str) -> okt.Kind:
        api_version, kind = SHORT_KINDS[short.lower().rstrip("s")]
        return self.kube.resolve(api_version, kind)

    def get(self, short: str, name: str) -> dict[str, Any]:
        return self.kube.get(self.kind(short), name, self.namespace)

    def conditions(self, short: str, name: str) -> dict[str, dict[str, Any]]:
        status = self.get(short, name).get("status") or {}
        return {c["type"]: c for c in status.get("conditions") or []}

    # -- commands -------------------------------------------------------------------------------------------------

    def run(self, words: list[str]) -> None:
        line = shlex.join(words)
        if words[:3] == ["okt", "envtest", "start"]:
            assert self.plane.kubeconfig.exists()
        elif words[0] == "export":
            assert words[1].startswith("KUBECONFIG=")
            self.env["KUBECONFIG"] = str(self.plane.kubeconfig)
        elif words[:3] == ["kubectl", "apply", "-f"]:
            self.apply(self.project / words[3])
        elif words[:2] == ["okt", "run"]:
            self.start_operator(words)
        elif words[:2] == ["kubectl", "wait"]:
            self.wait(words[2:])
        elif words[:2] == ["kubectl", "get"]:
            for ref in words[2:]:
                short, name = ref.split("/")
                assert self.get(short, name)["metadata"]["name"] == name
        elif words[:2] == ["kubectl", "patch"]:
            short, name = words[2], words[3]
            assert words[4:7] == ["--type", "merge", "-p"]
            self.kube.patch(self.kind(short), name, json.loads(words[7]), self.namespace)
        elif words[:2] == ["kubectl", "describe"]:
            self.describe(words[2], words[3])
        elif words[:3] == ["okt", "envtest", "stop"]:
            self.stop_operator()
        elif words[:3] == ["python", "-m", "pytest"]:
            self.run_page_tests(words[3:])
        else:
            raise AssertionError(f"no way to run {line!r}")

    def apply(self, path: pathlib.Path) -> None:
        for document in yaml.safe_load_all(path.read_text()):
            if document["kind"] == "CustomResourceDefinition":
                self.apply_crd(document)
                continue
            document.setdefault("metadata", {})["namespace"] = self.namespace
            self.kube.create(document, self.kube.kind_of(document))

    def start_operator(self, words: list[str]) -> None:
        assert self.operator is None, "the page starts the operator once"
        args = [w if w != "default" else self.namespace for w in words[1:]]
        okt_bin = pathlib.Path(sys.executable).with_name("okt")
        argv = [str(okt_bin), *args, "--metrics-bind-address", "127.0.0.1:0", "--webhook-port", "0"]
        argv += ["--log-format", "console", "-v"]  # -v: the page's "next reconciles" (unchanged=3) are debug lines
        self.operator = OperatorProcess(argv, env=self.env, cwd=self.project, log_path=self.operator_log).start()

    def wait(self, args: list[str]) -> None:
        for_, ref, timeout = args
        short, name = ref.split("/")
        seconds = float(timeout.removeprefix("--timeout=").removesuffix("s"))
        condition = for_.removeprefix("--for=")
        if condition.startswith("condition="):
            wanted_type, _, wanted = condition.removeprefix("condition=").partition("=")
            status = "False" if wanted == "false" else "True"
            wait_for(
                lambda: self.conditions(short, name).get(wanted_type, {}).get("status") == status,
                timeout=seconds,
                message=lambda: f"{ref} {wanted_type}={status}; has {self.conditions(short, name)}",
            )
            return
        path, _, value = condition.removeprefix("jsonpath=").partition("=")
        keys = path.strip("'{}").strip(".").split(".")

        def field() -> str:
            current: Any = self.get(short, name)
            for key in keys:
                current = current[key]
            return str(current)

        wait_for(lambda: field() == value, timeout=seconds, message=lambda: f"{ref} {path}={value}; has {field()}")

    def describe(self, short: str, name: str) -> None:
        """What the page says ``kubectl describe`` shows after the untagged image."""
        ready = self.conditions(short, name)["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
        assert ready["message"] == "spec.image: 'memcached' has no tag"

        def warned() -> bool:
            events, _ = self.kube.list(kinds.EVENT, self.namespace)
            return any(
                (e["type"], e["reason"], e["involvedObject"]["name"]) == ("Warning", "InvalidSpec", name)
                for e in events
            )

        # The Event is recorded once the status write the wait above saw has landed, a moment later.
        wait_for(warned, timeout=10, message="the InvalidSpec Warning event")

    def stop_operator(self) -> None:
        """Ctrl-C, as the reader stops it."""
        if self.operator is not None:
            self.operator_exit = self.operator.stop(timeout=30, signum=signal.SIGINT)
            self.operator = None

    def run_page_tests(self, args: list[str]) -> None:
        """Run the reader's tests as the reader does; the child session starts its own control plane."""
        env = {k: v for k, v in self.env.items() if not k.startswith("PYTEST_")}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=self.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-4000:]
        self.page_tests_summary = output.strip().splitlines()[-1]


@pytest.fixture
def page_project(tmp_path: pathlib.Path) -> Iterator[Any]:
    with snippets.isolated_imports(("memcached_operator", "okt_operator_main")):
        yield snippets.walk(tmp_path, snippets.BLOCKS)


def test_the_cluster_steps_of_getting_started_work_as_written(
    kube: okt.Client,
    control_plane: ControlPlane,
    apply_crd: Callable[[dict[str, Any]], okt.Kind],
    namespace: str,
    page_project: Any,
) -> None:
    reader = Reader(kube, control_plane, apply_crd, namespace, page_project.project)
    ran: list[str] = []
    idle_seen = False
    try:
        for block in snippets.BLOCKS:
            if block.kind != "cluster":
                continue
            for words in snippets.commands(block.text):
                reader.run(words)
                ran.append(shlex.join(words))
                if words[:2] == ["kubectl", "wait"] and not idle_seen:
                    # Right after the first convergence the page says: "The next reconciles find nothing to do" —
                    # the Deployment's status updates bring one (after the controller's child_change_delay).
                    wait_for(lambda: "unchanged=3" in reader.operator_log.read_text(errors="replace"), timeout=30)
                    idle_seen = True
    finally:
        reader.stop_operator()

    log = reader.operator_log.read_text(errors="replace")
    assert "okt run main.py --namespace default" in ran and "python -m pytest tests/" in ran
    assert re.fullmatch(r"=* ?3 passed in [\d.]+s(?: \([\d:]+\))? ?=*", reader.page_tests_summary), (
        reader.page_tests_summary
    )
    assert reader.operator_exit == 0, log[-2000:]
    assert ">CRChecker>ObjectsGetter>Mutator>Updater>SuccessManager>End" in log
    assert "created=3" in log and "unchanged=3" in log
    assert ">CRChecker>ErrorManager>End" in log
    # No kubelet: the Pods never start, so Available stays False while Ready says every child is as desired.
    assert reader.conditions("memcached", "memcached-sample")["Available"]["status"] == "False"
    deployment = reader.get("deployment", "memcached-sample")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    # The untagged image was refused: the children were left as the last good spec made them.
    assert (deployment["spec"]["replicas"], container["image"]) == (3, "memcached:1.6")
