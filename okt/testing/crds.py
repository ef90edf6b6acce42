"""Install a CRD and wait until the apiserver serves its kind (for tests, demos and benchmarks)."""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Any

import yaml

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds
from okt.testing import envtest, waiting

OWNER_MAPPING_RELOAD = 30.0
"""Seconds between two reloads of the mapping a stock API server's owner-reference admission resolves kinds through:
a CRD created just after one is refused as an owner until the next."""

DEFAULT_TIMEOUT = 2 * OWNER_MAPPING_RELOAD
"""How long :func:`ensure_crd` waits for each step by default: the longest, with stock binaries, is the owner-reference
admission's wait, up to one whole :data:`OWNER_MAPPING_RELOAD`; the rest leaves room for a loaded machine."""


def schemaless_crd(
    group: str, kind: str, plural: str, version: str = "v1", *, namespaced: bool = True
) -> dict[str, Any]:
    """A CRD accepting any object (``x-kubernetes-preserve-unknown-fields``) with a status subresource.

    For tests of behaviour that does not depend on a schema; generate real CRDs with ``okt gen crd``.
    """
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced" if namespaced else "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def load_crd(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The CustomResourceDefinition in a YAML file (``okt gen crd``'s output, or the first CRD of a multi-document
    manifest).

    Raises:
        ValueError: the file holds no CustomResourceDefinition.
    """
    documents = [d for d in yaml.safe_load_all(pathlib.Path(path).read_text()) if isinstance(d, dict)]
    crd = next((d for d in documents if d.get("kind") == "CustomResourceDefinition"), None)
    if crd is None:
        raise ValueError(f"{path} holds no CustomResourceDefinition")
    return crd


def ensure_crd(
    client: kube_client.Client,
    crd: dict[str, Any],
    timeout: float = DEFAULT_TIMEOUT,
    plane: envtest.ControlPlane | None = None,
) -> kinds.Kind:
    """Create or replace a CRD, wait until it is Established, listed by discovery in every version it serves, served
    and known to the API server's admission as an owner (a child's controller reference to it is accepted), and
    return its kind.

    A CRD still being deleted (custom resources' finalizers hold it) is waited for, then created anew.

    With ``plane``, a newly created CRD restarts kube-controller-manager so its garbage collector knows the kind at
    once (instead of at its next rediscovery, about 30 s later).

    ``timeout`` bounds each wait, 60 s by default: okt's own API server build knows a new kind as an owner at once, but
    a stock one (``KUBEBUILDER_ASSETS``, a real cluster) reloads the mapping its owner-reference admission looks kinds
    up in every 30 s (:data:`OWNER_MAPPING_RELOAD`), so that wait alone may take the whole 30 s: a 30 s default would
    fail there now and then for no fault of the CRD.

    Raises:
        okt.testing.WaitTimeout: the CRD is not Established, served and known as an owner within ``timeout``
            seconds (each), or a deletion of it did not end in that time.
    """
    name = crd["metadata"]["name"]
    created = False
    try:
        client.create(crd, kinds.CRD)
        created = True
    except errors.Conflict:
        live = client.get(kinds.CRD, name)
        if live["metadata"].get("deletionTimestamp"):
            # Replaced, it would lose the API server's cleanup finalizer: gone at once, its resources left in etcd.
            waiting.wait_for(
                lambda: client.get_or_none(kinds.CRD, name) is None,
                timeout=timeout,
                message=f"CRD {name}, being deleted, to go (finalizers of its custom resources may hold it)",
            )
            client.create(crd, kinds.CRD)
            created = True
        else:
            client.replace(
                kinds.CRD,
                {**crd, "metadata": {**crd["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}},
            )

    def established() -> bool:
        return kinds.is_established(client.get(kinds.CRD, name))

    waiting.wait_for(established, timeout=timeout, message=f"CRD {name} Established")
    # Discovery lists the kind a moment later (tens of milliseconds, one time in four): an operator started at once
    # looks its kinds up there.
    waiting.wait_for(
        lambda: envtest.lists_kind_of(crd, functools.partial(_api_resources, client)),
        timeout=timeout,
        message=f"discovery to list CRD {name}'s kind",
    )
    spec = crd["spec"]
    served = next(v["name"] for v in spec["versions"] if v.get("served", True))
    kind = kinds.Kind(
        f"{spec['group']}/{served}",
        spec["names"]["kind"],
        spec["names"]["plural"],
        spec.get("scope", "Namespaced") == "Namespaced",
    )
    waiting.wait_for(lambda: client.list(kind, "default") is not None, timeout=timeout, message=f"{kind.plural} served")
    # Namespaced or not: a cluster-scoped kind owns namespaced children too, through the same admission check.
    waiting.wait_for(
        lambda: _owner_references_resolve(client, kind),
        timeout=timeout,
        message=f"the API server's admission to know {kind.kind} as an owner",
    )
    if created and plane is not None:
        plane.restart_controller_manager()
    return kind


def _api_resources(client: kube_client.Client, path: str) -> dict[str, Any] | None:
    """The APIResourceList at ``path``, or None where the server does not serve that group version."""
    try:
        listing: dict[str, Any] = client.request("GET", path, verb="get", resource="discovery").json()
    except errors.NotFound:
        return None
    return listing


def _owner_references_resolve(client: kube_client.Client, kind: kinds.Kind) -> bool:
    """Whether the API server's admission resolves ``kind`` in an ownerReference with ``blockOwnerDeletion`` (its
    REST mapping lags a moment behind a new CRD: until then such a write is refused with 403). A dry run, no object."""
    probe = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "generateName": "okt-owner-probe-",
            "namespace": "default",
            "ownerReferences": [
                {
                    "apiVersion": kind.api_version,
                    "kind": kind.kind,
                    "name": "probe",
                    "uid": "00000000-0000-0000-0000-000000000000",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
    }
    try:
        client.request(
            "POST",
            kinds.CONFIG_MAP.collection_path("default"),
            verb="dry-run",
            resource="configmaps",
            params={"dryRun": "All"},
            body=probe,
            write=False,  # a dry run changes nothing
        )
    except errors.Forbidden:
        return False
    return True
