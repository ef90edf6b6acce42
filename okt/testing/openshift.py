"""OpenShift's ``ClusterOperator`` CRD (``config.openshift.io/v1``), to test an operator's mirror off OpenShift.

Why this exists: a reconciler that declares ``cluster_operator`` writes its summary onto a ``ClusterOperator`` where
that kind is served. OpenShift ships the CRD; a plain cluster (and the local control plane) does not, so tests install
this one. It keeps the fields of OpenShift's schema that the status is made of — conditions (``type``, ``status``,
``lastTransitionTime`` required; ``reason``, ``message``), ``versions`` (``name``, ``version``), ``relatedObjects``
(``group``, ``resource``, ``name`` required; ``namespace``) and ``extension`` — so the API server prunes and refuses
what OpenShift's would, with the status subresource and the printer columns of ``oc get clusteroperators``.
"""

from __future__ import annotations

from typing import Any

GROUP = "config.openshift.io"


def _strings(*names: str) -> dict[str, Any]:
    return {name: {"type": "string"} for name in names}


def cluster_operator_crd() -> dict[str, Any]:
    """The CRD of ``clusteroperators.config.openshift.io`` (cluster-scoped, status subresource)."""
    condition = {
        "type": "object",
        "required": ["lastTransitionTime", "status", "type"],
        "properties": {"lastTransitionTime": {"type": "string", "format": "date-time"}}
        | _strings("message", "reason", "status", "type"),
    }
    related = {
        "type": "object",
        "required": ["group", "name", "resource"],
        "properties": _strings("group", "name", "namespace", "resource"),
    }
    version = {"type": "object", "required": ["name", "version"], "properties": _strings("name", "version")}
    status = {
        "type": "object",
        "properties": {
            "conditions": {"type": "array", "items": condition},
            "extension": {"type": "object", "nullable": True, "x-kubernetes-preserve-unknown-fields": True},
            "relatedObjects": {"type": "array", "items": related},
            "versions": {"type": "array", "items": version},
        },
    }
    columns = [
        {"name": "Version", "type": "string", "jsonPath": '.status.versions[?(@.name=="operator")].version'},
        *(
            {"name": name, "type": "string", "jsonPath": f'.status.conditions[?(@.type=="{name}")].status'}
            for name in ("Available", "Progressing", "Degraded")
        ),
        {"name": "Since", "type": "date", "jsonPath": '.status.conditions[?(@.type=="Available")].lastTransitionTime'},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"clusteroperators.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": "ClusterOperator",
                "listKind": "ClusterOperatorList",
                "plural": "clusteroperators",
                "singular": "clusteroperator",
                "shortNames": ["co"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }
