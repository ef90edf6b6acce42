"""``okt run`` as the ServiceAccount ``okt gen rbac`` binds, holding exactly the generated rules: it passes its own
permission check, leads through its Lease, creates and updates children, writes the status subresource and Events,
adds its finalizer and removes it once the cleanup ran, and no request of it is refused."""

from __future__ import annotations

import os
import pathlib
import re
import secrets
import textwrap
from typing import Any

import pytest

from okt.codegen import crd, deploy, rbac
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.reconciler import loader
from okt.testing import OperatorProcess, envtest, wait_for
from tests.integration import service_accounts

pytestmark = pytest.mark.integration

GROUP = "genrbac.okt.io"

OPERATOR_SOURCE = textwrap.dedent(
    f'''
    import okt


    class GadgetSettings(okt.MutableResource):
        api_version = "v1"
        kind = "ConfigMap"
        template = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{{{ name }}}}-settings
      namespace: {{{{ namespace }}}}
    data:
      size: "{{{{ cr.spec.size }}}}"
    """


    class GadgetReconciler(okt.Reconciler):
        api_version = "{GROUP}/v1"
        kind = "Gadget"
        owns = (GadgetSettings,)
        finalizer = "{GROUP}/cleanup"

        def resources(self, ctx):
            if not ctx.cr.spec.get("size"):
                raise okt.TemporaryError("size must be at least 1", delay=1)
            return [GadgetSettings(ctx.cr)]

        def cleanup(self, ctx):
            return None
    '''
)


def ready_status(obj: dict[str, Any] | None) -> str | None:
    conditions = (obj or {}).get("status", {}).get("conditions", [])
    return next((c["status"] for c in conditions if c["type"] == "Ready"), None)


# None: every Lease of the namespace; the name okt run derives (okt- and the controller's name): that Lease alone,
# which okt run's permission check must then ask about by name (asked of every Lease, it was refused, and okt run
# stopped).
@pytest.mark.parametrize("lease_name", [None, "okt-gadget"], ids=["every-lease", "its-lease"])
def test_okt_run_with_exactly_the_generated_rbac_reconciles_and_finalizes_without_a_refusal(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: Any,
    tmp_path: pathlib.Path,
    lease_name: str | None,
) -> None:
    operator_file = tmp_path / "gadget_operator.py"
    operator_file.write_text(OPERATOR_SOURCE)
    reconcilers = loader.load_reconcilers(str(operator_file))
    gadget: kinds.Kind = apply_crd(crd.crd_for_reconciler(reconcilers[0]))
    documents = rbac.rbac_for_reconcilers(
        reconcilers,
        namespace=namespace,
        service_account="gadget-operator",
        leader_elect=True,
        metrics_auth=False,
        lease_name=lease_name,
    )
    for document in documents:
        kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
    settings = kube.resolve("v1", "ConfigMap")
    kube.create(
        {"apiVersion": gadget.api_version, "kind": "Gadget", "metadata": {"name": "g", "namespace": namespace}}
        | {"spec": {"size": 0}},
        gadget,
    )
    running = OperatorProcess.okt_run(
        operator_file,
        kubeconfig=service_accounts.kubeconfig_of(kube, control_plane, namespace, "gadget-operator"),
        namespaces=[namespace],
        args=["--leader-elect", "--lease-namespace", namespace],
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3])},
        log_path=tmp_path / "operator.log",
    )

    with running as started:
        # Refused first (a Warning Event, Ready False), then reconciled (a Normal Event, Ready True).
        wait_for(lambda: ready_status(kube.get_or_none(gadget, "g", namespace)) == "False", timeout=60)
        kube.patch(gadget, "g", {"spec": {"size": 2}}, namespace)
        wait_for(lambda: ready_status(kube.get_or_none(gadget, "g", namespace)) == "True", timeout=60)
        wait_for(
            lambda: (kube.get_or_none(settings, "g-settings", namespace) or {}).get("data") == {"size": "2"},
            timeout=60,
            message="the child updated",
        )
        kube.delete(gadget, "g", namespace)
        wait_for(lambda: kube.get_or_none(gadget, "g", namespace) is None, timeout=60)
        log = started.log_text()

    events, _ = kube.list(kube.resolve("v1", "Event"), namespace)
    said = {(event["type"], event["reason"]) for event in events if event["involvedObject"].get("name") == "g"}
    assert ("Normal", "Reconciled") in said, said
    assert any(kind == "Warning" for kind, _ in said), said
    assert kube.get_or_none(kube.resolve("coordination.k8s.io/v1", "Lease"), "okt-gadget", namespace) is not None
    assert "missing permission" not in log
    # A refusal as okt says it (`-> 403 Forbidden`), not the digits inside a timestamp's fraction (21.624032Z).
    assert re.search(r"\b403\b", log) is None and "Forbidden" not in log, log


def test_okt_run_with_the_args_and_rbac_of_okt_gen_deploy_serving_everything_leads_on_the_one_lease_granted(
    kube: kube_client.Client,
    control_plane: envtest.ControlPlane,
    namespace: str,
    apply_crd: Any,
    tmp_path: pathlib.Path,
) -> None:
    """The tree of an operator serving every namespace names the Lease (``--lease-name``, the name ``okt run`` derives
    from its reconcilers) and grants get and update of it alone: ``okt run`` started with the Deployment's arguments
    and environment, as the ServiceAccount of the generated rules, passes its permission check and leads on exactly
    that Lease. The Role granted every verb on every Lease of the namespace: another operator's too."""
    operator_file = tmp_path / "gadget_operator.py"
    operator_file.write_text(OPERATOR_SOURCE)
    reconcilers = loader.load_reconcilers(str(operator_file))
    gadget: kinds.Kind = apply_crd(crd.crd_for_reconciler(reconcilers[0]))
    name = f"gadget-{secrets.token_hex(3)}"  # its ClusterRole and ClusterRoleBinding are cluster-wide
    operator = deploy.Operator(reconcilers, name, namespace, "gadget:1")
    documents = operator.rbac()
    (role,) = [doc for doc in documents if doc["kind"] == "Role"]
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["okt-gadget"],
            "verbs": ["get", "update"],
        },
    ]
    (container,) = operator.deployment("gadget:1")["spec"]["template"]["spec"]["containers"]
    entry_point, *args = container["args"]
    assert entry_point == "/app/main.py"
    assert "--all-namespaces" in args and "--lease-name=okt-gadget" in args
    # The probes and metrics on a free loopback port, not the pod's :8080, and the JSON logs: okt_run gives both
    # (the Deployment's --log-format=json too). Every other argument as the Deployment gives it.
    assert "--log-format=json" in args
    args = [arg for arg in args if not arg.startswith(("--metrics-bind-address=", "--log-format="))]
    (pod_namespace,) = container["env"]
    assert pod_namespace["name"] == "POD_NAMESPACE"  # from the downward API in a pod: the Lease's namespace
    leases = kube.resolve("coordination.k8s.io/v1", "Lease")
    try:
        for document in documents:
            kube.create(document, kube.resolve(document["apiVersion"], document["kind"]))
        kube.create(
            {"apiVersion": gadget.api_version, "kind": "Gadget", "metadata": {"name": "g", "namespace": namespace}}
            | {"spec": {"size": 2}},
            gadget,
        )
        running = OperatorProcess.okt_run(
            operator_file,
            kubeconfig=service_accounts.kubeconfig_of(kube, control_plane, namespace, name),
            args=args,
            env={
                **os.environ,
                "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[3]),
                "POD_NAMESPACE": namespace,
            },
            log_path=tmp_path / "operator.log",
        )
        with running as started:
            wait_for(lambda: ready_status(kube.get_or_none(gadget, "g", namespace)) == "True", timeout=60)
            lease = kube.get(leases, "okt-gadget", namespace)
            assert lease["spec"]["holderIdentity"], lease
            held = [item["metadata"]["name"] for item in kube.list(leases, namespace)[0]]
            kube.delete(gadget, "g", namespace)
            wait_for(lambda: kube.get_or_none(gadget, "g", namespace) is None, timeout=60)
            log = started.log_text()
    finally:
        for kind in ("ClusterRoleBinding", "ClusterRole"):
            kube.delete(kube.resolve("rbac.authorization.k8s.io/v1", kind), name)
    assert held == ["okt-gadget"]
    assert "missing permission" not in log
    assert re.search(r"\b403\b", log) is None and "Forbidden" not in log, log
