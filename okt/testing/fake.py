"""A client that keeps objects in memory: unit tests of a reconciler with no cluster at all.

Why this exists: a reconcile is a function of what the API server holds, and most of its rules — which children,
which status, which error for which failure — can be pinned in milliseconds without one. :class:`FakeClient` is an
:class:`okt.kube.client.Client` (so ``okt.reconcile`` and your hooks take it as they are) that answers the verbs a
reconcile sends from a dict, the way the API server would, and counts them in :attr:`~FakeClient.stats` as the real
client does. It plays the part httpx's ``MockTransport`` plays for HTTP code.

Example::

    from okt.testing import FakeClient, condition

    fake = FakeClient(kinds=[MEMCACHED])
    fake.put({"apiVersion": ..., "kind": "Memcached", "metadata": {"name": "cache", "namespace": "ns"}, ...})

    run = okt.reconcile(MemcachedReconciler(), fake, None, "ns", "cache")

    assert run.outcome.kind is okt.OutcomeKind.DONE
    assert fake.stored(kinds.CONFIG_MAP, "cache-config", "ns") is not None
    assert condition(fake.stored(MEMCACHED, "cache", "ns"), "Ready")["status"] == "True"
    fake.fail("apply", "deployments", errors.ApiError.from_status(409, "Conflict", "stale"))  # the next one fails

What it does as the API server does:

* a value a refusal carries is written as the server's Go code writes it (``Invalid value: "é\\x01"``: a string
  quoted as Go's ``%q`` quotes it, :func:`okt.testing.gotext.quote`, not as JSON);
* every write body (and what :meth:`~FakeClient.put` stores) is encoded by :func:`okt.kube.client.encode_body`, as
  okt's client sends it, and decoded as the API server decodes it: a body the client cannot send raises what the
  client raises (``TypeError`` for a ``datetime``, a set, bytes, a plain ``Enum`` member; ``ValueError`` for a NaN or
  an infinity), nothing counted; a tuple is stored as a list, an int key as a string;
* objects are keyed by (apiVersion, kind, namespace, name); every write that changes one bumps a global
  ``resourceVersion`` (an apply that changes only who owns a field too: a second field manager applying the value a
  field holds, a manager no longer applying a field another owns — the server writes the managedFields it changed),
  and a change outside ``metadata`` and ``status`` bumps ``metadata.generation`` (so does a
  change of a Deployment's annotations; ConfigMaps, Secrets, Services, PersistentVolumeClaims, RBAC objects and a
  few more kinds have no generation); ``uid`` and ``creationTimestamp`` are set on create (an apply's too); empty
  ``labels``, ``annotations``, ``finalizers`` and ``ownerReferences`` are left out;
* 404 :class:`~okt.errors.NotFound` for a missing object, :class:`~okt.errors.NotServed` (``404 page not found``) for
  a kind not served, from every verb, as the client raises the API server's answer for a kind whose CRD is not
  installed; 409 :class:`~okt.errors.Conflict` for a create of an existing object (``already_exists``), a stale
  ``metadata.resourceVersion`` in a patch (merge or JSON), apply or update, a wrong uid or resourceVersion
  precondition on delete or a wrong uid in an update's body, an apply that would create an object naming a uid; 500
  :class:`~okt.errors.ServerError` for a create naming a ``metadata.resourceVersion`` (a body copied from another
  object); 400 :class:`~okt.errors.BadRequest` for a patch that renames its object, a create or an update whose body is
  of another kind than its path addresses (or names none, for a custom kind: the API server takes a built-in kind's
  ``kind`` and ``apiVersion``, each, from the path), 500 for such an apply (as Kubernetes 1.20 answers it); 422
  :class:`~okt.errors.Invalid` (with the API server's ``causes``, one per refused field — but none for a failed
  ``test``: okt tells a refused write from a lost race by them) when a JSON patch's ``test`` fails, a patch or an apply
  changes the uid, a patch changes the ``apiVersion`` or ``kind``, a write adds a finalizer to an object being deleted,
  an update of a custom resource names no ``metadata.resourceVersion``, a create names no object (neither ``name`` nor
  ``generateName``), or a write holds a name, a label, an annotation, a finalizer or an owner reference the API server
  refuses (its rules in ``okt.testing.metadata``: ``Cache-Config``, a Service named ``1a``, a label value of 64
  characters, a finalizer ``clean up``, an owner reference without a uid, a second controller reference), each in the
  server's words (``a valid label must be an empty string or consist of ... regex used for validation is ...``);
* every kind has a status subresource (on the API server, a ConfigMap's or a Secret's ``/status``, or that of a custom
  resource whose CRD declares none, is a 404, and the latter's status is written with the object): writes to the object
  leave ``status`` alone, writes to ``status`` change nothing else, a create drops the status it is given;
* an apply with ``force=False`` that sets a field another field manager owns (applied, or written by a create, a
  patch or an update: under the ``field_manager`` a patch names, else ``okt``, the client's) to another value is a 409
  :class:`~okt.errors.Conflict`, nothing stored, with one ``FieldManagerConflict`` cause per field and manager and the
  API server's message (``Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1:
  .spec.replicas``); applying the value the field holds shares it; ``force=True`` takes the field from its other
  owners;
* every write of an object — a create, an update, a patch, an apply, and what :meth:`~FakeClient.put` stores — fills
  in the server's defaults of one table, :data:`okt.testing.defaults.DEFAULTS` (a Deployment's ``strategy``, a pod
  template's ``restartPolicy``, a container's ``imagePullPolicy`` and ``terminationMessagePath``, a Service's
  ``sessionAffinity``...), and stores the quantities of Kubernetes' own kinds in their canonical form (``1024Mi`` as
  ``1Gi``, ``1000m`` as ``1``): a write that spells out a default, or another spelling of a quantity, is no change
  (same ``resourceVersion``, no new ``generation``), as on the server;
* every write of an object through a verb is validated, once defaulted, against one table of the server's rules,
  :data:`okt.testing.validation.RULES`: a Deployment whose ``strategy.type`` is ``Recreate`` holding a
  ``rollingUpdate`` — given, or left by the defaults of an earlier ``RollingUpdate`` strategy, which a merge, JSON or
  strategic merge patch or an apply of ``type: Recreate`` keeps — is the server's 422 (``spec.strategy.rollingUpdate:
  Forbidden``); an update must drop it, a merge patch set it to ``null``. So are a StatefulSet's ``OnDelete``
  ``updateStrategy`` holding a ``rollingUpdate`` (``spec.updateStrategy.rollingUpdate: Invalid value:
  apps.RollingUpdateStatefulSetStrategy{Partition:0}: only allowed for updateStrategy 'RollingUpdate'``), a
  StatefulSet's ``updateStrategy`` of an unknown ``type`` (``spec.updateStrategy: Invalid value:
  apps.StatefulSetUpdateStrategy{...}: must be 'RollingUpdate' or 'OnDelete'``), its unknown ``podManagementPolicy``
  and its negative ``partition``, a
  Deployment's unknown ``strategy.type`` (``spec.strategy: Unsupported value: apps.DeploymentStrategy{...}``: where
  the strategy holds a ``rollingUpdate`` the server writes its address, which the fake cannot match), each unnamed port
  of a Service of several (``spec.ports[1].name: Required value``) and a ``nodePort`` on a ``ClusterIP`` Service
  (``spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'``), named by a create or kept by an
  update that makes it ``ClusterIP`` while it changes a node port, an unknown ``externalTrafficPolicy`` and one on a
  Service neither ``NodePort`` nor ``LoadBalancer`` (``spec.externalTrafficPolicy: Invalid value: "Local":
  ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service``: checked, as the server checks it, once
  the rest passes), a Deployment's, a StatefulSet's, a ReplicaSet's or a DaemonSet's ``selector`` left out or not
  selecting its Pods' template (``spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}:
  `selector` does not match template `labels` ``), their negative ``replicas`` and their template's ``restartPolicy``
  other than ``Always``, and in a Pod or the template of a Deployment, a DaemonSet, a ReplicaSet, a Job or a CronJob
  (not a StatefulSet's, which Kubernetes 1.20 keeps) a container without a ``name`` or an ``image``, two containers
  of one name or two ports of one container of one name (``spec.template.spec.containers[1].name: Duplicate value:
  "app"``), an environment variable without a name or of one a shell could not read, a container's name that is no
  DNS label, a container requesting more than its limits (``resources.requests: Invalid value: "2": must be less
  than or equal to cpu limit``, once for each resource) and a ``restartPolicy`` Kubernetes does not know, a
  workload's empty ``selector`` (``spec.selector: Invalid value: v1.LabelSelector{...}: empty selector is invalid for
  deployment``), a Job's or a CronJob's template ``restartPolicy`` neither ``OnFailure`` nor ``Never``, a template's
  labels and annotations (``spec.template.labels: Invalid value: "-x": ...``); a Job is created as the server creates
  it: unless its ``manualSelector`` is true, given a selector of its own Pods (``controller-uid: <its uid>``) and those
  labels on its template (``job-name`` too; a template naming another Job, or a selector given, is the server's 422:
  ``spec.selector: Invalid value: ...: `selector` not auto-generated``), and, created without labels, its template's,
  those among them (a manual selector must select the template's labels; an update removing it is refused as
  missing and as changed); a CronJob's job template giving a selector or ``manualSelector: true`` (each Job is
  given its own); the causes of one write are listed as the server lists them, the object's metadata's before its
  spec's, a Pod spec's container by container, an update's refused fields with those it may not change (a Job's, a
  ReplicaSet's or a DaemonSet's spec's causes twice, the message naming each once: the server validates the spec
  again as an update's); a ``null``
  written in a field of the defaults' table is left out, as the server decodes it (``strategy: {type: Recreate,
  rollingUpdate: null}`` is stored
  ``{type: Recreate}``), and so is a ``""`` in a string field of that table, which Go holds in no pointer
  (``strategy: {type: ""}`` is a ``RollingUpdate`` strategy);
* a Service is given a cluster IP (:mod:`okt.testing.services`), and a ``NodePort`` or ``LoadBalancer`` one a node port
  for each port naming none (and a ``healthCheckNodePort`` for ``externalTrafficPolicy: Local``), kept by an apply that
  leaves them out; a node port named that another Service holds (a node port or a health check node port) is the
  server's 422 (``spec.ports[0].nodePort: Invalid value: 30100: provided port is already allocated``), one named twice
  in a Service its ``Duplicate value``, on a create and on an update alike; a port is free again once its Service is
  deleted, names another, or is made ``ClusterIP`` or ``ExternalName`` (which drops its node ports where the write
  left them as they were, and its ``externalTrafficPolicy`` whatever the write said, as the server does); a
  ``healthCheckNodePort`` named that a Service holds (this one's node ports included) is the server's 500
  (``Internal error occurred: failed to allocate requested HealthCheck NodePort 30100: provided port is already
  allocated``), an update that changes it or leaves it out (but an apply, which keeps it) its 422
  (``spec.healthCheckNodePort: Invalid value: 0: cannot change healthCheckNodePort on loadBalancer service with
  externalTraffic=Local during update``), one on a Service other than a ``LoadBalancer`` of ``externalTrafficPolicy:
  Local`` its 422 (``HealthCheckNodePort can only be set on LoadBalancer service with ExternalTrafficPolicy=Local``);
  an update that makes a Service need none (of another type, or ``externalTrafficPolicy: Cluster``) drops it,
  whatever the write said; a Service needing a cluster IP or a node port when every one of the range is held is the
  server's 500 (``Internal error occurred: failed to allocate a nodePort: range is full``);
* a Secret's ``stringData`` is written into its ``data`` (base64, over the value ``data`` holds under the key) by
  every write and never stored nor answered; a value that is not a string is refused as each verb refuses it (400 for
  a create or an update, 422 for a patch, 500 for an apply on Kubernetes 1.20);
* a value of the right JSON type the server cannot decode into its kind's Go object is refused as each verb refuses
  it: a Secret's ``data`` that is not base64, a quantity that is none (a container's ``resources`` in a Pod, a
  PodTemplate or a workload's template, a CronJob's job template, a ResourceQuota's ``hard``, a LimitRange's limits, a
  PersistentVolumeClaim's ``resources``, a HorizontalPodAutoscaler's targets, ``autoscaling/v2beta1``'s too; an
  apply's check covers every quantity of Kubernetes' own kinds), a time that is none in one of Kubernetes' own kinds
  (``creationTimestamp: yesterday``, a Job's ``status.startTime``, a condition's ``lastTransitionTime``: ``parsing
  time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"``,
  :func:`okt.testing.validation.time_error`; one written as a JSON number, ``json: cannot unmarshal number into Go
  value of type string``; a custom resource's ``metadata`` too, but by an apply, which Kubernetes 1.20 lets store
  it) — an apply's 500 on
  Kubernetes 1.20 (``failed to convert new object to proper version: unable to convert unstructured object to /v1,
  Kind=Secret: error decoding from json: illegal base64 data at input byte 3``,
  :func:`okt.testing.validation.check_decodable`), a create's or an update's 400 (``Pod in version "v1" cannot be
  handled as a Pod: v1.Pod.Spec: ...``, :func:`okt.testing.validation.undecodable_path`: the server's path where the
  value closes each object it is in, as the server names each field it reads after it too), a patch's 422 naming the
  patched object (the server quotes it whole, its uid and managedFields with it);
* merge patches follow RFC 7386 (``null`` deletes); JSON patches (RFC 6902) support ``test`` (values compared as JSON:
  ``true`` is not ``1``, nor ``1.0`` the integer ``1``), ``add``, ``remove`` and ``replace``; a delete of an object with
  finalizers sets ``deletionTimestamp`` (and bumps ``generation``) and the object goes when its last finalizer is
  removed (the write that removes it answers the object as it left it, with the ``resourceVersion`` it had: nothing
  is stored); a deleted object's dependents (by ``ownerReferences`` uid) go with it unless ``propagation="Orphan"`` or
  another of their owners is still there (at once, where the garbage collector takes a moment; a dependent with
  finalizers is marked and stays until they are removed; one that stays loses its reference to the deleted owner).

okt's tests run sequences of requests on the fake and on the API server and compare the answers
(``tests/integration/testing/test_fake_parity.py``); the differences they leave out are those listed below.

Limits, on purpose:

* server-side apply is approximated: the applied object is merged into the stored one (a ``null`` is stored as a
  value, as in a custom resource without a schema, where a merge patch's ``null`` deletes), and a field its field
  manager applied before and no longer applies is removed when no other writer owns it too (another apply of the
  same value, or a create, patch or update that wrote it since);
* the lists the API server merges by key are merged by key in an apply: those of Kubernetes' own kinds in
  :data:`okt.resources.list_keys.KINDS` (a Service's ``ports`` by port and protocol, a pod template's ``containers`` and
  ``volumes`` by name, a container's ``env`` by name and ``ports`` by port and protocol, ...; a container port's
  ``protocol`` left out is ``TCP``, a Service port's is the 500 of Kubernetes 1.20, whose apply schema gives it no
  default — newer servers make it ``TCP`` —, as is an item of a keyed list leaving out a key field without a default,
  or two items of one key: ``failed to create typed patch object: .spec.ports: element 0: associative list with keys
  has an element that omits key field "protocol" (and doesn't have default value)``,
  :func:`okt.testing.validation.check_apply`), ``metadata.finalizers`` (by value) and ``metadata.ownerReferences``
  (by uid) of every kind, and those of a custom kind given as ``keyed_lists`` (its CRD's ``x-kubernetes-list-type:
  map`` lists, by their ``x-kubernetes-list-map-keys``; a key field left out is its schema default):
  ``FakeClient(kinds=[...], keyed_lists={CERTIFICATE: Certificate.keyed_lists})``, the ``keyed_lists`` okt made of
  the :attr:`~okt.resources.resource.Resource.openapi_schema` of a child's class. An item is owned by its key, as the
  server's managedFields own ``k:{"port":80,"protocol":"TCP"}``: an applied item is merged field by field into the
  stored item of its key; the items of other writers stay where they are; new items are appended in the applied order
  (as on Kubernetes 1.20, which okt is tested on; newer servers put the applied items in the applied order among the
  others); an item its manager applied before and no longer applies is removed, unless another writer owns it (a field
  another writer set in it goes with it, as on the server). So another writer's finalizer or owner reference stays, and
  okt's controller reference beside another controller's is a 422, as on the server. Every other list is atomic
  (replaced whole): a custom kind's not given so (the fake reads no CRD), a built-in kind's list missing from that
  table, and a keyed list whose items cannot be keyed (a key field holding a map or a list); merge patches and
  strategic merge patches replace every list whole;
* ``managedFields`` are not kept (:meth:`~FakeClient.put` is no one's write: the fields it stores keep
  the owners they had, or have none; no one owns ``apiVersion``, ``kind``, nor the name and the identity in
  ``metadata``), so an update or a patch of the object whose body holds status fields its writer did not own keeps the
  ``resourceVersion`` (dropped from the object, they are added to the writer's managedFields on Kubernetes 1.20, which
  bumps it), as does an apply naming only an empty object another writer filled (``spec: {}``); an apply to
  ``status`` and one to the object are two owners even under one field manager, as on Kubernetes 1.22 and later (1.20,
  which okt is tested on, keeps one entry for both: there one's apply can stop owning what the other applied, which
  the next apply then leaves);
* ``propagation="Foreground"`` deletes as ``"Background"`` does (the server keeps the object, with
  ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer, until its dependents that block it are gone);
  ``"Orphan"`` lets the dependents go at once (the server marks the object with the ``orphan`` finalizer until its
  garbage collector has taken the references out);
* there is no garbage collector but the deletion of an owner: an object whose every owner reference names an object
  that is not stored (a uid made up in a test, an owner never created) stays, where the server's garbage collector
  deletes it;
* a write to the status of one of Kubernetes' own kinds changes nothing but the status, as a custom resource's does;
  on the server some of its metadata goes through too, as the kind's status strategy lets it (a Deployment's
  annotations and finalizers, not its labels);
* ``metadata.generation`` is the fake's on every create; a kind without one (a ConfigMap) keeps on the server the
  generation its create's body names (a body copied from a Deployment), which the fake drops;
* namespaces are not checked: an object is created in a namespace no Namespace object names (the server answers 404
  ``namespaces "x" not found``), and a deleted Namespace leaves its objects (the server deletes them first);
* strategic merge patches are treated as merge patches (lists replaced whole, never merged by key);
* no schema, no defaulting but that table's (a DaemonSet's, a CronJob's or a Pod's defaults are not filled in: a write
  spelling one out is stored as a change), no validation (but of metadata, above, and of the fields of Kubernetes' own
  kinds that never change in place, :mod:`okt.testing.immutable`'s: a write changing a Deployment's selector, a
  StatefulSet's ``volumeClaimTemplates``, a Service's cluster IP, a PersistentVolumeClaim's spec or the data of an
  ``immutable`` ConfigMap is the server's 422, each side compared with the table's defaults, and of
  :mod:`okt.testing.validation`'s table, above); no admission; no watch
  (:meth:`~FakeClient.watch` raises): run an operator under its manager on a real control plane
  (:class:`okt.testing.RunningOperator`) to test the runtime;
* :meth:`~FakeClient.resolve` knows Kubernetes' built-in kinds and those passed as ``kinds`` or stored with
  :meth:`~FakeClient.put`; any other kind is a 404, as discovery would answer.
"""

from __future__ import annotations

import base64
import builtins
import collections
import copy
import datetime
import itertools
import json
import secrets
import threading
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, NoReturn

from okt import errors, secret_values
from okt.kube import client as kube_client
from okt.kube import discovery, selectors
from okt.kube import kinds as kinds_mod
from okt.resources import list_keys
from okt.testing import defaults, gotext, immutable, metadata, patching, services, validation

_Key = tuple[str, str, str, str]
_Path = patching.Path
_SET_BY_SERVER = ("resourceVersion", "uid", "creationTimestamp", "generation", "deletionTimestamp")
"""The fields of ``metadata`` the server sets itself on a create (an apply's too), whatever the body says."""
_Writer = tuple[str, ...]  # ("Apply", field manager, subresource) or ("Update", field manager): see _updater
_UNOWNED: frozenset[_Path] = frozenset(
    {("apiVersion",), ("kind",), *(("metadata", field) for field in ("name", "namespace", *_SET_BY_SERVER))}
)
"""The fields no writer owns: the API server leaves them out of managedFields (an apply naming only its object owns
nothing)."""
_CLIENT_MANAGER = "okt"
"""The field manager the API server records a create, patch or update under when it names none: the first word of
the request's User-Agent, which okt's client sends as ``okt``."""
# Kubernetes' own kinds whose objects have no metadata.generation, on every version of the API server: nothing in
# them is a desired state a controller reports having observed. (Custom resources, Deployments, Ingresses,
# PodDisruptionBudgets... have one.)
_WITHOUT_GENERATION = frozenset(
    {
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "ServiceAccount"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "PodTemplate"),
        ("v1", "Endpoints"),
        ("v1", "Event"),
        ("v1", "Namespace"),
        ("v1", "Node"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("coordination.k8s.io/v1", "Lease"),
    }
)


class FakeClient(kube_client.Client):
    """An in-memory :class:`okt.kube.client.Client` (see the module documentation for what it does and does not).

    Args:
        kinds: kinds it serves besides Kubernetes' built-in ones (your custom resources).
        objects: objects stored up front, as :meth:`put` stores them.
        keyed_lists: the lists an apply merges by key in an object of a custom kind, as its CRD's schema declares
            them (``x-kubernetes-list-type: map``): what the class of a child of that kind makes of its
            :attr:`~okt.resources.resource.Resource.openapi_schema`, its ``keyed_lists`` —
            ``FakeClient(keyed_lists={CERTIFICATE: Certificate.keyed_lists})``. Each kind named is served; one given
            None (a class without a schema), or not named, has every list replaced whole, as before.

    Raises:
        ValueError: ``keyed_lists`` names a kind of a built-in group (its lists are okt's table's,
            :data:`okt.resources.list_keys.KINDS`, whatever a class declares).
        TypeError: ``keyed_lists`` gives a kind something else than a :class:`okt.resources.list_keys.Lists` or None
            (a CRD's schema itself: give the ``keyed_lists`` a class made of it).
    """

    def __init__(
        self,
        *,
        kinds: Iterable[kinds_mod.Kind] = (),
        objects: Iterable[Mapping[str, Any]] = (),
        keyed_lists: Mapping[kinds_mod.Kind, list_keys.Lists | None] | None = None,
    ) -> None:
        # No kubeconfig and no HTTP session: the base class's constructor is not called on purpose, every verb is
        # answered here.
        self.stats = kube_client.RequestStats()
        self.default_namespace = "default"
        self.rate_limit = None
        self._lock = threading.RLock()
        self._served: dict[tuple[str, str], kinds_mod.Kind] = dict(kinds_mod.BUILTIN)
        self._objects: dict[_Key, dict[str, Any]] = {}
        self._owners: dict[_Key, dict[_Path, set[_Writer]]] = {}
        self._version = itertools.count(1000)
        self._held = services.Held()  # the cluster IPs and node ports of the stored Services
        # The uids of the stored objects, the keys of those naming each uid as an owner, and the order each key was
        # stored in (the dict's): a deletion finds its dependents without a scan of the store.
        self._uids: collections.Counter[Hashable] = collections.Counter()
        self._dependents: dict[Hashable, set[_Key]] = {}
        self._order: dict[_Key, int] = {}
        self._stored_in_order = itertools.count()
        self._failures: list[list[Any]] = []
        self._keyed: dict[tuple[str, str], list_keys.Schema] = {}
        for kind in kinds:
            self.serve(kind)
        for kind, lists in (keyed_lists or {}).items():
            named = f"keyed_lists: {kind.kind} of {kind.api_version}"
            if lists is not None and not isinstance(lists, list_keys.Lists):
                raise TypeError(
                    f"{named}: a {type(lists).__name__}, not the keyed_lists of a Resource class (okt.resources."
                    "list_keys.Lists) or None"
                )
            if lists is not None and kinds_mod.is_builtin_group(kind.api_version):
                raise ValueError(
                    f"{named} is a built-in kind: its keyed lists are okt's table's (okt.resources.list_keys.KINDS)"
                )
            self.serve(kind)
            if lists is not None:
                self._keyed[(kind.api_version, kind.kind)] = lists.schema
        for obj in objects:
            self.put(obj)

    # -- what a test does --------------------------------------------------------------------------------------------

    def serve(self, kind: kinds_mod.Kind) -> None:
        """Serve ``kind`` from now on (what installing its CRD does)."""
        with self._lock:
            self._served[(kind.api_version, kind.kind)] = kind

    def put(self, obj: Mapping[str, Any], kind: kinds_mod.Kind | None = None) -> dict[str, Any]:
        """Store ``obj`` as the API server would hold it, status included (create or replace, not counted in
        :attr:`stats`); returns it as stored. ``kind`` is served from now on; without it, the object's kind must be
        served already. As every write does, it fills in the defaults of :data:`okt.testing.defaults.DEFAULTS` and
        writes quantities in their canonical form (an object on a cluster has them, whoever wrote it: a reconcile's
        first write of the spec it was given is no change, as there), a Secret's ``stringData`` into its ``data``,
        and a Job without a selector what its creation gives it (a selector of its own Pods, their labels on its
        template: a later write of it is checked as the server checks a Job it holds). Nothing else is checked: no
        validation, no cluster IP nor node port allocated.

        Raises:
            TypeError, ValueError: ``obj`` is not JSON, so no API server could hold it (see :func:`_received`), or a
                Secret whose ``stringData`` is not a mapping of strings.
        """
        if kind is not None:
            self.serve(kind)
        stored = defaults.fill(_fold_string_data(_received(obj), _unstorable))
        _select_own_pods(stored, checked=False)
        return self._store(stored)

    def _store(self, stored: dict[str, Any]) -> dict[str, Any]:
        """Store ``stored``, decoded and defaulted, as a new object (or in place of the one of its key), given its
        identity where it has none and a new ``resourceVersion``; returns a copy."""
        with self._lock:
            meta = stored.setdefault("metadata", {})
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", _now())
            if (stored.get("apiVersion"), stored.get("kind")) not in _WITHOUT_GENERATION:
                meta.setdefault("generation", 1)
            meta["resourceVersion"] = self._next_version()
            self._keep(self._key_of(stored), stored)
            return copy.deepcopy(stored)

    def stored(self, kind: kinds_mod.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object as stored (a copy), or None — for assertions: not counted in :attr:`stats`."""
        with self._lock:
            found = self._objects.get(_key(kind, name, namespace))
            return copy.deepcopy(found) if found is not None else None

    def objects(self, kind: kinds_mod.Kind | None = None, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every stored object (of ``kind``, in ``namespace``) — not counted in :attr:`stats`. Sorted by kind, then as
        the API server lists them: by ``namespace/name`` as text, the key of the object in etcd (``ns-b/x`` comes
        before ``ns/x``)."""
        return self._select(kind, namespace)

    def _select(
        self,
        kind: kinds_mod.Kind | None,
        namespace: str | None,
        labels: Callable[[Mapping[str, str]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """:meth:`objects`, of those whose labels ``labels`` accepts: each object chosen before it is copied (a list
        by label selector among many objects copied every one of them, then threw most away)."""
        with self._lock:
            chosen = [
                (key, obj)
                for key, obj in self._objects.items()
                if (kind is None or key[:2] == (kind.api_version, kind.kind))
                and (namespace is None or key[2] == namespace)
                and (labels is None or labels((obj.get("metadata") or {}).get("labels") or {}))
            ]
            chosen.sort(key=lambda item: (*item[0][:2], "/".join(item[0][2:])))
            return [copy.deepcopy(obj) for _, obj in chosen]

    def fail(
        self, verb: str, resource: str, error: errors.ApiError | Callable[[], errors.ApiError], times: int = 1
    ) -> None:
        """Make the next ``times`` requests of ``verb`` on ``resource`` raise ``error`` (counted, nothing changed).

        ``verb`` and ``resource`` are spelled as in :attr:`stats`: ``("apply", "deployments")``,
        ``("patch", "memcacheds/status")``, ``("get", "configmaps")``.
        """
        with self._lock:
            self._failures.append([verb, resource, error, times])

    # -- the client's surface ----------------------------------------------------------------------------------------

    def request(self, method: str, path: str, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"FakeClient sends no HTTP request ({method} {path}): use a verb method")

    def resolve(self, api_version: str, kind: str) -> kinds_mod.Kind:
        with self._lock:
            found = self._served.get((api_version, kind))
        if found is None:
            raise errors.ApiError.from_status(404, "NotFound", f"the server does not serve {kind} in {api_version}")
        return found

    def require_served(
        self,
        wanted: Iterable[kinds_mod.Kind],
        waiting: Callable[[str], object] | None = None,
        stopping: threading.Event | None = None,
    ) -> None:
        """The client's check at start: a kind the fake does not serve (see :meth:`serve`), or serves under another
        plural or scope than ``wanted`` declares, is ``NotFound``, at once: the fake waits for no CRD being loaded,
        so ``stopping`` has no wait to end."""
        for kind in wanted:
            mismatch = kinds_mod.addressing_mismatch(kind, self.resolve(kind.api_version, kind.kind))
            if mismatch:
                raise errors.ApiError.from_status(404, "NotFound", mismatch)

    def resolve_name(self, name: str) -> kinds_mod.Kind:
        with self._lock:
            served = [discovery.Served(kind, kind.kind.lower()) for kind in self._served.values()]
        return discovery.match(name, served)

    def get(
        self, kind: kinds_mod.Kind, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        with self._lock:
            kinds_mod.check_name(kind, name)  # the client refuses it before any request: nothing counted
            self._count("get", _label(kind, subresource))
            found = copy.deepcopy(self._existing(kind, name, namespace))
        secret_values.hold(kind.api_version, kind.kind, (found,))  # as the client's read does
        return found

    def list_pages(
        self,
        kind: kinds_mod.Kind,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
        resource_version: str | None = None,
        paged: bool = True,
    ) -> Iterator[tuple[builtins.list[dict[str, Any]], str]]:
        with self._lock:  # one page, from one snapshot, whatever ``page_size`` and ``paged`` ask
            self._count("list", kind.plural)
            self._check_served(kind)
            try:
                wanted = selectors.matcher(label_selector)
            except ValueError as exc:  # what the API server says of a selector it cannot read
                raise _error(400, "BadRequest", f"unable to parse requirement: {exc}") from None
            items = self._select(kind, namespace if kind.namespaced else None, wanted)
            version = str(next(self._version))
        secret_values.hold(kind.api_version, kind.kind, items)
        yield items, version

    def watch(self, kind: kinds_mod.Kind, namespace: str | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
        raise NotImplementedError("FakeClient does not watch: run the operator on a control plane to test the runtime")

    def create(self, obj: Mapping[str, Any], kind: kinds_mod.Kind | None = None) -> dict[str, Any]:
        kind = kind or self.kind_of(obj)
        body = _received(obj)
        with self._lock:
            self._count("create", kind.plural)
            self._check_served(kind)
            _check_kind(kind, body)
            _check_decodable(kind, body)
            body = _fold_string_data(body, _undecodable)
            body.pop("status", None)
            meta = body.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                # The server keeps 58 characters of the prefix: with its 5 random ones, a name fits a DNS label.
                meta["name"] = meta["generateName"][:58] + secrets.token_hex(3)[:5]
            if not meta.get("name"):
                raise _invalid(
                    "FieldValueRequired", "metadata.name", "Required value: name or generateName is required"
                )
            if kind.namespaced and not meta.get("namespace"):
                raise _error(400, "BadRequest", f"a {kind.kind} needs metadata.namespace")
            if not kind.namespaced:
                meta.pop("namespace", None)  # the server drops it: a cluster-scoped object is in no namespace
            _check_metadata(kind, body)
            if meta.get("resourceVersion"):
                # The storage refuses it, as an error of its own (500), not as a 4xx a client would correct.
                raise _error(500, "InternalError", "resourceVersion should not be set on objects to be created")
            key = _key(kind, meta.get("name", ""), meta.get("namespace"))
            if key in self._objects:
                raise _error(409, "AlreadyExists", f'{_resource(kind)} "{key[3]}" already exists')
            # The server sets the identity itself: a body copied from another object (a Secret copied into another
            # namespace) gets its own uid (but one naming its resourceVersion was refused above).
            for field in _SET_BY_SERVER:
                meta.pop(field, None)
            body.setdefault("apiVersion", kind.api_version)
            body.setdefault("kind", kind.kind)
            _leave_out_empty(meta)
            # What its writer owns: the defaults the server filled in (it decoded them into the body), not the
            # cluster IP and the node ports it allocates.
            body = defaults.fill(body)
            written = copy.deepcopy(body)
            _select_own_pods(body)
            self._admit(kind, key, None, body)
            created = self._store(body)
            self._own(key, {}, written, _updater(None))
            return created

    def patch(
        self,
        kind: kinds_mod.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        patch = _received(patch, patch_type)
        with self._lock:
            kinds_mod.check_name(kind, name)
            self._count("patch", _label(kind, subresource))
            live = self._existing(kind, name, namespace)
            if patch_type == "json":
                changed = patching.json_patch(live, patch)
            elif patch_type in ("merge", "strategic"):
                changed = patching.merge_patch(live, patch)
            else:
                raise _error(415, "UnsupportedMediaType", f"FakeClient does not speak {patch_type} patches")
            if (found := validation.undecodable_path(kind, changed)) is not None:
                raise _invalid("FieldValueInvalid", "patch", f"Invalid value: the patched {kind.kind}: {found}")
            changed = _fold_string_data(changed, _unpatchable)
            # The version the patched object names is the update's precondition, whichever patch set it.
            _check_version(kind, live, changed)
            _check_identity(live, changed, subresource)
            written = self._write(live, changed, subresource)
            self._own(_key(kind, name, namespace), live, written, _updater(field_manager))
            return written

    def apply(
        self,
        obj: Mapping[str, Any],
        kind: kinds_mod.Kind | None = None,
        *,
        field_manager: str,
        force: bool = True,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        kind = kind or self.kind_of(obj)
        body = _received(obj, "apply")
        meta = body.get("metadata") or {}
        with self._lock:
            kinds_mod.check_name(kind, str(meta.get("name") or ""))
            self._count("apply", _label(kind, subresource))
            self._check_served(kind)
            if (body.get("apiVersion"), body.get("kind")) != (kind.api_version, kind.kind):
                # Kubernetes 1.20 fails to merge the two types: an error of its own (500), not a 4xx.
                raise _error(
                    500,
                    "InternalError",
                    f"failed to merge config: expected objects of the same type, but got a {body.get('kind')} of "
                    f"{body.get('apiVersion')} and a {kind.kind} of {kind.api_version}",
                )
            _fold_string_data(copy.deepcopy(body), _untyped)  # refused before it is merged
            validation.check_apply(kind, body, self._schema(kind.api_version, kind.kind))
            validation.check_decodable(kind, body)
            key = _key(kind, meta["name"], meta.get("namespace"))
            live = self._objects.get(key)
            if live is None and subresource is not None:
                raise _error(404, "NotFound", f'{_resource(kind)} "{meta["name"]}" not found')
            writer = ("Apply", field_manager, subresource or "")
            schema = self._schema(kind.api_version, kind.kind)
            applied = patching.fields(_scope(body, subresource), schema)
            if live is None:
                if meta.get("uid"):  # a uid is a precondition: it names an object that does not exist
                    raise _error(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {_resource(kind)} "{meta["name"]}": uid mismatch: the '
                        f"provided object specified uid {meta['uid']}, and no existing object was found",
                    )
                created = {k: v for k, v in body.items() if k != "status"}
                for field in _SET_BY_SERVER:
                    created["metadata"].pop(field, None)
                if not kind.namespaced:
                    created["metadata"].pop("namespace", None)
                _check_metadata(kind, created)
                _leave_out_empty(created["metadata"])
                created = _fold_string_data({"apiVersion": kind.api_version, "kind": kind.kind, **created}, _untyped)
                created = defaults.fill(created)
                _select_own_pods(created)
                self._admit(kind, key, None, created)
                created = self._store(created)
                self._own(key, {}, created, writer, applied)
                return created
            _check_version(kind, live, body)
            if subresource is None and meta.get("uid") not in (None, live["metadata"].get("uid")):
                detail = f"Invalid value: {gotext.value(meta['uid'])}: field is immutable"
                raise _invalid("FieldValueInvalid", "metadata.uid", detail)
            owners = self._owners.get(key, {})
            if not force:
                _check_conflicts(kind, owners, writer, live, body, subresource, schema)
            # What this manager applied before and no longer applies goes, unless another writer owns it too.
            gone = [path for path, writers in owners.items() if writers == {writer} and path not in applied]
            changed = _fold_string_data(
                patching.apply_merge(patching.without(live, gone, schema), body, schema), _untyped
            )
            owned_before = _owned(owners)
            written = self._write(live, changed, subresource)
            self._own(key, live, written, writer, applied)
            if key in self._objects and _owned(self._owners.get(key, {})) != owned_before and written == live:
                # Who owns what changed, and nothing else: the server still writes the object (its managedFields
                # changed), with a new resourceVersion a watcher sees.
                written = self._touch(key)
            return written

    def replace(self, kind: kinds_mod.Kind, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        body = _received(obj)
        meta = body.get("metadata") or {}
        with self._lock:
            kinds_mod.check_name(kind, str(meta.get("name") or ""))
            self._count("update", _label(kind, subresource))
            live = self._existing(kind, meta["name"], meta.get("namespace"))
            _check_kind(kind, body)
            _check_decodable(kind, body)
            body = _fold_string_data(body, _undecodable)
            if not meta.get("resourceVersion") and kinds_mod.builtin(kind.api_version, kind.kind) is None:
                # Kubernetes' own kinds take an update without a version (last write wins); custom resources do not.
                raise _invalid(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )
            _check_version(kind, live, body)
            if meta.get("uid") and meta["uid"] != live["metadata"].get("uid"):
                # The body's uid is a precondition of an update: it names another incarnation of the object.
                raise _error(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {live['metadata'].get('uid')}, "
                    f"UID in object meta: {meta['uid']}",
                )
            written = self._write(live, body, subresource)
            self._own(_key(kind, meta["name"], meta.get("namespace")), live, written, _updater(None))
            return written

    def delete(
        self,
        kind: kinds_mod.Kind,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> bool:
        with self._lock:
            kinds_mod.check_name(kind, name)
            self._count("delete", kind.plural)
            self._check_served(kind)
            key = _key(kind, name, namespace)
            live = self._objects.get(key)
            if live is None:
                return False
            meta = live["metadata"]
            if uid is not None and meta.get("uid") != uid:
                raise _error(409, "Conflict", f"precondition failed: uid {uid}, the object's is {meta.get('uid')}")
            if resource_version is not None and meta.get("resourceVersion") != resource_version:
                raise _error(
                    409,
                    "Conflict",
                    f"precondition failed: resourceVersion {resource_version}, "
                    f"the object's is {meta.get('resourceVersion')}",
                )
            if meta.get("finalizers"):
                self._mark_deleted(meta)
                if propagation == "Orphan":  # done at once, not when the object goes with its last finalizer
                    self._collect(meta.get("uid"), orphan=True)
                return True
            self._remove(key, orphan=propagation == "Orphan")
            return True

    def server_version(self) -> str:
        return "v0.0.0-fake"

    def close(self) -> None:
        return None

    # -- the store ---------------------------------------------------------------------------------------------------

    def _count(self, verb: str, resource: str) -> None:
        self.stats.record(verb, resource)
        for failure in self._failures:
            if failure[:2] == [verb, resource] and failure[3] > 0:
                failure[3] -= 1
                error = failure[2]
                raise error() if callable(error) else error

    def _check_served(self, kind: kinds_mod.Kind) -> None:
        """A kind not served is a path the API server does not serve: its answer is ``404 page not found`` with no
        Status, which the client raises as :class:`okt.errors.NotServed` (``get_or_none()`` and ``delete()`` too: they
        learnt nothing of the object)."""
        if (kind.api_version, kind.kind) not in self._served:
            raise errors.NotServed(
                404,
                "Not Found",
                f"404 page not found (FakeClient serves no {kind.kind} in {kind.api_version}: name it in "
                "FakeClient(kinds=[...]) or serve() it, as installing its CRD would)",
            )

    def _existing(self, kind: kinds_mod.Kind, name: str, namespace: str | None) -> dict[str, Any]:
        self._check_served(kind)
        found = self._objects.get(_key(kind, name, namespace))
        if found is None:
            raise _error(404, "NotFound", f'{_resource(kind)} "{name}" not found')
        return found

    def _key_of(self, obj: Mapping[str, Any]) -> _Key:
        kind = self.kind_of(obj)
        meta = obj.get("metadata") or {}
        return _key(kind, str(meta.get("name", "")), meta.get("namespace"))

    def _keep(self, key: _Key, obj: dict[str, Any]) -> None:
        """Store ``obj`` at ``key``, in place of the object there, and what it holds in place of what that held."""
        old = self._objects.get(key)
        if old is None:
            self._order[key] = next(self._stored_in_order)
        else:
            self._held.release(old)
            self._unindex(key, old)
        self._objects[key] = obj
        self._held.hold(obj)
        self._index(key, obj)

    def _index(self, key: _Key, obj: Mapping[str, Any]) -> None:
        """Count ``obj``'s uid and the owners it names (:meth:`_unindex` before a change of its ``ownerReferences``)."""
        if isinstance(uid := obj["metadata"].get("uid"), Hashable):
            self._uids[uid] += 1
        for uid in _owner_uids(obj):
            self._dependents.setdefault(uid, set()).add(key)

    def _unindex(self, key: _Key, obj: Mapping[str, Any]) -> None:
        if isinstance(uid := obj["metadata"].get("uid"), Hashable):
            self._uids[uid] -= 1
            if self._uids[uid] <= 0:
                del self._uids[uid]
        for owner in _owner_uids(obj):
            dependents = self._dependents.get(owner, set())
            dependents.discard(key)
            if not dependents:
                self._dependents.pop(owner, None)

    def _next_version(self) -> str:
        return str(next(self._version))

    def _write(self, live: dict[str, Any], changed: dict[str, Any], subresource: str | None) -> dict[str, Any]:
        """Store ``changed`` in place of ``live`` as the server would: status only through the subresource, the
        identity kept, the generation bumped on a change of the rest, nothing written when nothing changed."""
        if subresource == "status":
            new = {**copy.deepcopy(live), "status": changed.get("status")}
            if new["status"] is None:
                del new["status"]
        else:
            new = {k: v for k, v in changed.items() if k != "status"}
            if "status" in live:
                new["status"] = copy.deepcopy(live["status"])
            meta = new.setdefault("metadata", {})
            for field in (
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ):
                if field in live["metadata"]:
                    meta[field] = live["metadata"][field]
                else:
                    meta.pop(field, None)
            _leave_out_empty(meta)
            new = defaults.fill(new)
            meta = new["metadata"]
            if _desired_of(new) != _desired_of(live) and "generation" in live["metadata"]:
                meta["generation"] = int(live["metadata"]["generation"]) + 1
            _check_finalizers(live, new)
            kind = self.kind_of(live)
            _check_metadata(kind, new, name=False)
            self._admit(kind, self._key_of(live), live, new)
            immutable.check(kind, live, new)
        new["metadata"]["resourceVersion"] = live["metadata"].get("resourceVersion")
        if new == live:
            return copy.deepcopy(live)
        key = self._key_of(live)
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            # The write that removes the last finalizer is not stored: the server deletes the object and answers it as
            # the write left it, with the resourceVersion it had.
            self._remove(key, orphan=False)
            return copy.deepcopy(new)
        new["metadata"]["resourceVersion"] = self._next_version()
        self._keep(key, new)
        return copy.deepcopy(new)

    def _own(
        self,
        key: _Key,
        before: Mapping[str, Any],
        after: Mapping[str, Any],
        writer: _Writer,
        applied: Mapping[_Path, Any] | None = None,
    ) -> None:
        """Record which writer owns which field after a write, as the API server's managedFields do.

        A field the write changed is its writer's alone (an update, or a forced apply, takes it from every other
        owner); an applied field already holding the applied value is shared; a field its manager no longer
        applies is no longer its own. A field the object no longer has is nobody's.
        """
        if key not in self._objects:
            return
        schema = self._schema(key[0], key[1])
        was, now = patching.fields(before, schema), patching.fields(after, schema)
        owners = self._owners.setdefault(key, {})
        for path in [path for path in owners if path not in now]:
            del owners[path]
        for path, value in now.items():
            if path in _UNOWNED:
                continue
            if applied is not None and path not in applied:
                owners.get(path, set()).discard(writer)
            elif path not in was or was[path] != value:
                owners[path] = {writer}
            elif applied is not None:
                owners.setdefault(path, set()).add(writer)

    def _touch(self, key: _Key) -> dict[str, Any]:
        """Give the object at ``key`` a new ``resourceVersion`` (a write that changed only its managedFields, which
        the fake does not keep); returns it as stored."""
        stored = self._objects[key]
        stored["metadata"]["resourceVersion"] = self._next_version()
        return copy.deepcopy(stored)

    def _admit(self, kind: kinds_mod.Kind, key: _Key, live: Mapping[str, Any] | None, new: dict[str, Any]) -> None:
        """What the API server does to ``new``, defaulted, before it stores it in place of ``live`` (None: a create),
        whichever verb wrote it: refuse what its validation refuses (:mod:`okt.testing.validation`'s table); give a
        Service its cluster IP, or keep it (:mod:`okt.testing.services`), refuse a node port it names that another
        Service holds, and give one to each of its ports that names none; then refuse what the server's validation
        refuses only once it has allocated them (an ``externalTrafficPolicy`` or a ``healthCheckNodePort`` its
        type may not hold).

        Raises:
            okt.errors.Invalid: ``new`` is refused (nothing is written).
        """
        # An update's fields of a type the Service no longer is are dropped before it is validated, as the server's are.
        if services.is_service(new) and live is not None:
            services.settle(live, new, self._held.cluster_ips)
        if live is not None and not services.is_service(new):
            # A workload's update is validated whole, as the server validates it: the object's rules (a Job's, a
            # ReplicaSet's and a DaemonSet's twice: as an object, then as an update of one), then what may not
            # change, in one 422.
            found = validation.causes(kind, new)
            if (kind.api_version, kind.kind) in _VALIDATED_TWICE:
                found += found
            found += immutable.causes(kind, live, new)
            if found:
                raise metadata.refusal(kind, new, found)
        validation.check(kind, new)
        if not services.is_service(new):
            return
        if live is None:
            services.allocate(new, self._held.cluster_ips)
        others = self._held.held_by_others(self._objects.get(key))
        services.claim_node_ports(new, others, services.node_ports(live or {}))
        services.claim_health_check_port(live, new, others)
        services.allocate_node_ports(new, self._held.not_to_allocate())
        if live is not None:
            services.drop_external_traffic_policy(live, new)
        validation.check(kind, new, allocated=True)

    def _schema(self, api_version: str, kind: str) -> list_keys.Schema:
        """The lists an apply merges by key in an object of ``kind``: :func:`okt.testing.patching.schema_of`'s, and
        those given for a custom kind as ``keyed_lists`` (outside ``metadata``, whose lists are the API's own)."""
        return {**patching.schema_of(api_version, kind), **self._keyed.get((api_version, kind), {})}

    def _mark_deleted(self, meta: dict[str, Any]) -> None:
        """Begin the deletion of an object with finalizers: it stays, marked, until the last one is removed."""
        if meta.get("deletionTimestamp"):
            return
        meta["deletionTimestamp"] = _now()
        meta["deletionGracePeriodSeconds"] = 0
        # The server counts the start of a deletion as a change of the desired state: a reconciler's
        # observedGeneration falls behind it until the finalizing reconcile reports.
        if meta.get("generation"):
            meta["generation"] = int(meta["generation"]) + 1
        meta["resourceVersion"] = self._next_version()

    def _remove(self, key: _Key, *, orphan: bool) -> None:
        gone = self._objects.pop(key)
        self._held.release(gone)
        self._unindex(key, gone)
        del self._order[key]
        self._owners.pop(key, None)
        self._collect(gone["metadata"].get("uid"), orphan=orphan)

    def _collect(self, uid: str | None, *, orphan: bool) -> None:
        """What the garbage collector does to the dependents of a deleted object: it deletes them (one with
        finalizers is only marked, as any delete of it would); a dependent that stays (orphaned, or with another
        owner still there) loses its reference to the deleted object."""
        # In the order they were stored, as a scan of the store meets them.
        for other_key in sorted(self._dependents.get(uid, ()), key=self._order.__getitem__):
            other = self._objects.get(other_key)
            if other is None:
                continue
            meta = other["metadata"]
            refs = meta.get("ownerReferences") or ()
            if not any(ref.get("uid") == uid for ref in refs):
                continue
            if orphan or any(self._exists(ref.get("uid")) for ref in refs if ref.get("uid") != uid):
                kept = [ref for ref in refs if ref.get("uid") != uid]
                self._unindex(other_key, other)
                if kept:
                    meta["ownerReferences"] = kept
                else:
                    del meta["ownerReferences"]
                self._index(other_key, other)
                meta["resourceVersion"] = self._next_version()
            elif meta.get("finalizers"):
                self._mark_deleted(meta)
            else:
                self._remove(other_key, orphan=False)

    def _exists(self, uid: str | None) -> bool:
        return uid in self._uids


# -- the API server's rules, as functions --------------------------------------------------------------------------


_VALIDATED_TWICE = frozenset({("batch/v1", "Job"), ("apps/v1", "ReplicaSet"), ("apps/v1", "DaemonSet")})
"""The kinds whose update the API server validates as an object, then as an update whose own rules validate the
spec again: each of the spec's refusals is a cause twice (the message names it once)."""


def _key(kind: kinds_mod.Kind, name: str, namespace: str | None) -> _Key:
    return (kind.api_version, kind.kind, (namespace or "") if kind.namespaced else "", name)


def _owner_uids(obj: Mapping[str, Any]) -> set[Hashable]:
    """The uids ``obj``'s owner references name (None for one naming none: a deleted object without a uid, which only
    :meth:`FakeClient.put` stores, takes those with it)."""
    refs = obj["metadata"].get("ownerReferences")
    if not isinstance(refs, list):
        return set()
    return {ref.get("uid") for ref in refs if isinstance(ref, Mapping) and isinstance(ref.get("uid"), Hashable)}


def _resource(kind: kinds_mod.Kind) -> str:
    """The resource as the API server names it in its messages: qualified by its group, but for the core group's
    (``configmaps``, ``deployments.apps``, ``memcacheds.cache.example.com``)."""
    group = kind.api_version.rpartition("/")[0]
    return f"{kind.plural}.{group}" if group else kind.plural


def _label(kind: kinds_mod.Kind, subresource: str | None) -> str:
    return f"{kind.plural}/{subresource}" if subresource else kind.plural


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _received(body: Any, patch_type: str | None = None) -> Any:
    """What the API server receives of a write ``body`` (a patch of ``patch_type``, or a whole object): okt's client
    encodes it as it sends it, raising what the client raises (before anything is counted, as the client does), and
    the API server decodes that JSON — a tuple arrives as a list, an int key as a string, a ``str`` Enum member as its
    value.

    An apply's YAML-safe JSON (see :func:`okt.kube.client.yaml_safe_json`) means what the plain JSON of the same body
    means: that one is decoded.
    """
    content_type = kube_client.PATCH_TYPES.get(patch_type or "", "application/json")
    text = kube_client.encode_body(body, content_type)
    if content_type == kube_client.PATCH_TYPES["apply"]:
        text = kube_client.encode_body(body)
    return json.loads(text)


def _check_metadata(kind: kinds_mod.Kind, obj: Mapping[str, Any], *, name: bool = True) -> None:
    """Refuse the metadata of ``obj``, an object of ``kind`` about to be written, as :func:`okt.testing.metadata.check`
    does (its name too, unless ``name`` is False: an existing object's) and, beside it, what its spec breaks: the
    server validates an object whole, its metadata's refusals first, its spec's after them in one 422.

    Raises:
        okt.errors.Invalid: the metadata is refused.
    """
    found = metadata.causes(kind, obj["metadata"], name=name)
    if found:
        typed = {"apiVersion": kind.api_version, "kind": kind.kind, **obj}
        raise metadata.refusal(kind, obj, [*found, *validation.causes(kind, defaults.fill(typed))])


def _error(status: int, reason: str, message: str, *, causes: tuple[errors.StatusCause, ...] = ()) -> errors.ApiError:
    return errors.ApiError.from_status(status, reason, message, causes=causes)


def _invalid(reason: str, field: str, message: str) -> errors.ApiError:
    """A 422 as the API server's validation answers it: the message names the field, and so does its one cause
    (okt reads the causes to tell a refused write from a JSON patch whose ``test`` failed, which has none)."""
    return _error(422, "Invalid", f"{field}: {message}", causes=(errors.StatusCause(reason, message, field),))


def _scope(body: Mapping[str, Any], subresource: str | None) -> dict[str, Any]:
    """The part of a body a write to ``subresource`` may change: the status alone, or all but the status."""
    if subresource == "status":
        return {"status": body["status"]} if "status" in body else {}
    return {k: v for k, v in body.items() if k != "status"}


def _leave_out_empty(meta: dict[str, Any]) -> None:
    """Drop the empty metadata lists and maps, as the API server stores none (the last finalizer removed leaves no
    ``finalizers: []``: code reading ``meta["finalizers"]`` fails on a cluster as it does here)."""
    for field in ("labels", "annotations", "finalizers", "ownerReferences"):
        if field in meta and not meta[field]:
            del meta[field]


def _desired_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What a change of bumps the generation: all but metadata and status, and a Deployment's annotations too (its
    controller copies them to its ReplicaSets, so they are part of a rollout)."""
    desired = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    if (obj.get("apiVersion"), obj.get("kind")) == ("apps/v1", "Deployment"):
        desired["annotations"] = (obj.get("metadata") or {}).get("annotations") or {}
    return desired


def _check_kind(kind: kinds_mod.Kind, body: dict[str, Any]) -> None:
    """The object a create or an update sends is of the kind its path addresses (400 otherwise: a template whose
    ``kind`` is not its class's is refused on the server, not stored as another kind). For Kubernetes' own kinds the
    API server takes a missing ``kind`` and a missing ``apiVersion`` each from the path (set in ``body``); a custom
    kind's body must name both."""
    if kinds_mod.builtin(kind.api_version, kind.kind) is not None:
        body.setdefault("kind", kind.kind)
        body.setdefault("apiVersion", kind.api_version)
    api_version, named = body.get("apiVersion"), body.get("kind")
    if (api_version, named) != (kind.api_version, kind.kind):
        version = str(api_version or kind.api_version).rpartition("/")[2]
        detail = "" if api_version and named else f": Object '{'Kind' if not named else 'apiVersion'}' is missing"
        raise _error(
            400,
            "BadRequest",
            f'{named or kind.kind} in version "{version}" cannot be handled as a {kind.kind}{detail}',
        )


def _check_identity(live: Mapping[str, Any], patched: Mapping[str, Any], subresource: str | None) -> None:
    """A patch cannot move its object to another name or namespace (400), nor change its uid (422) or its type
    (422)."""
    if (patched.get("apiVersion"), patched.get("kind")) != (live.get("apiVersion"), live.get("kind")):
        raise _invalid(
            "FieldValueInvalid",
            "patch",
            f"Invalid value: {gotext.value(patched.get('kind'))}: a {patched.get('kind')} of "
            f"{patched.get('apiVersion')} cannot be handled as a {live.get('kind')} of {live.get('apiVersion')}",
        )
    was, now = live["metadata"], patched.get("metadata") or {}
    for field in ("name", "namespace"):
        if now.get(field) != was.get(field):
            raise _error(
                400,
                "BadRequest",
                f"the {field} of the object ({now.get(field)}) does not match the {field} of the request "
                f"({was.get(field)})",
            )
    if subresource is None and now.get("uid") != was.get("uid"):
        raise _invalid(
            "FieldValueInvalid", "metadata.uid", f"Invalid value: {gotext.value(now.get('uid'))}: field is immutable"
        )


def _check_finalizers(live: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """An object being deleted takes no new finalizer: its deletion waits only for those it had when it began."""
    if not live["metadata"].get("deletionTimestamp"):
        return
    added = [f for f in new["metadata"].get("finalizers") or () if f not in (live["metadata"].get("finalizers") or ())]
    if added:
        raise _invalid(
            "FieldValueForbidden",
            "metadata.finalizers",
            f"Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added}",
        )


def _fold_string_data(obj: dict[str, Any], refused: Callable[[str], Exception]) -> dict[str, Any]:
    """``obj`` as the API server decodes it: a Secret's ``stringData`` written into its ``data``, each value encoded
    in base64 (of its UTF-8) over the one ``data`` holds under its key, and ``stringData`` itself gone — never stored,
    never answered (code that reads back ``stringData`` finds nothing on a cluster). A ``stringData`` that is not a
    mapping of strings raises ``refused(what)``, the answer of the verb that sent it."""
    if (obj.get("apiVersion"), obj.get("kind")) != ("v1", "Secret") or "stringData" not in obj:
        return obj
    string_data = obj.pop("stringData")
    if string_data is None:
        return obj
    if not isinstance(string_data, dict):
        raise refused(f".stringData: expected map, got {type(string_data).__name__}")
    for key, value in string_data.items():
        if not isinstance(value, str):
            raise refused(f".stringData.{key}: expected string, got {type(value).__name__}")
    obj["data"] = {
        **(obj.get("data") or {}),
        **{key: base64.b64encode(value.encode()).decode() for key, value in string_data.items()},
    }
    return obj


def _select_own_pods(obj: dict[str, Any], *, checked: bool = True) -> None:
    """Give a Job about to be created what Kubernetes 1.20 gives it: unless its ``spec.manualSelector`` is true, a
    selector of its own Pods (``controller-uid: <its uid>``, the uid it is given here), and those labels on its Pods'
    template (``controller-uid`` and ``job-name``, where the template names neither); then, where the Job has no
    labels, its template's (those it was given among them). Code reading a Job's labels, or selecting its Pods by
    them, finds on the fake what it finds on a cluster.

    Not ``checked`` (:meth:`FakeClient.put`, which stores an object as a cluster holds it and checks nothing): a Job
    given a selector is left as it is, and one without is given what its creation gives it, nothing refused; a Job
    written in a test's fixture without the selector the server makes would fail every later write of it as a
    selector that does not select its template."""
    if (obj.get("apiVersion"), obj.get("kind")) != ("batch/v1", "Job") or not isinstance(obj.get("spec"), dict):
        return
    spec, meta = obj["spec"], obj.setdefault("metadata", {})
    if not isinstance(spec.get("template"), dict) or not (checked or spec.get("selector") is None):
        return
    template = spec["template"]
    if not spec.get("manualSelector"):
        uid = meta.setdefault("uid", str(uuid.uuid4()))
        template["metadata"] = template.get("metadata") or {}
        labels = template["metadata"]["labels"] = template["metadata"].get("labels") or {}
        labels.setdefault("controller-uid", uid)
        labels.setdefault("job-name", meta.get("name"))
        selector = spec["selector"] = spec.get("selector") or {}
        selector["matchLabels"] = selector.get("matchLabels") or {}
        selector["matchLabels"].setdefault("controller-uid", uid)
        # A template naming another Job, or a selector of its own, is refused: its Pods would not be this Job's.
        # The server's order: the metadata's refusals, these, then the spec's.
        causes = [
            errors.StatusCause(
                "FieldValueInvalid",
                f"Invalid value: {validation.go_labels(labels)}: must be '{wanted}'",
                f"spec.template.metadata.labels[{key}]",
            )
            for key, wanted in (("controller-uid", uid), ("job-name", meta.get("name")))
            if labels[key] != wanted
        ]
        if selector != {"matchLabels": {"controller-uid": uid}}:
            causes.append(
                errors.StatusCause(
                    "FieldValueInvalid",
                    f"Invalid value: {validation.go_selector(selector)}: `selector` not auto-generated",
                    "spec.selector",
                )
            )
        if causes and checked:
            kind = kinds_mod.BUILTIN[("batch/v1", "Job")]
            found = [*metadata.causes(kind, meta, name=False), *causes, *validation.causes(kind, obj)]
            raise metadata.refusal(kind, obj, found)
    labels = (template.get("metadata") or {}).get("labels")
    if not meta.get("labels") and labels:
        meta["labels"] = dict(labels)


def _check_decodable(kind: kinds_mod.Kind, body: Mapping[str, Any]) -> None:
    """Refuse the body of a create or an update the API server cannot decode into its kind's Go object
    (:func:`okt.testing.validation.undecodable_path`: a Secret's ``data`` that is not base64, a quantity that is none)
    with its 400; an apply's is its 500 (:func:`okt.testing.validation.check_decodable`)."""
    found = validation.undecodable_path(kind, body)
    if found is not None:
        version = kind.api_version.rpartition("/")[2]
        raise _error(
            400,
            "BadRequest",
            f'{kind.kind} in version "{version}" cannot be handled as a {kind.kind}: {found}, error found in #10 byte '
            "of the request (its text left out)",
        )


def _undecodable(what: str) -> errors.ApiError:
    """How a create or an update of a body the API server cannot decode as its kind is answered."""
    return _error(400, "BadRequest", f'Secret in version "v1" cannot be handled as a Secret: {what}')


def _unpatchable(what: str) -> errors.ApiError:
    """How a patch that leaves its object undecodable as its kind is answered."""
    return _invalid("FieldValueInvalid", "patch", f"Invalid value: the patched Secret: {what}")


def _untyped(what: str) -> errors.ApiError:
    """How Kubernetes 1.20 answers an apply of a body its schema cannot type: an error of its own (500)."""
    return _error(500, "InternalError", f"failed to create typed patch object: {what}")


def _unstorable(what: str) -> Exception:
    return ValueError(f"FakeClient.put: no API server holds this Secret ({what})")


def _updater(field_manager: str | None) -> _Writer:
    """The owner of what a create, a patch or an update writes: its field manager, the client's by default. Each
    field it changes becomes its own alone, as the API server records it (an ``Update`` entry of managedFields); it
    never removes a field it stops setting, as an apply does."""
    return ("Update", field_manager or _CLIENT_MANAGER)


def _check_conflicts(
    kind: kinds_mod.Kind,
    owners: Mapping[_Path, set[_Writer]],
    writer: _Writer,
    live: Mapping[str, Any],
    body: Mapping[str, Any],
    subresource: str | None,
    schema: list_keys.Schema,
) -> None:
    """An apply without force may not change a field another manager owns (by an apply or an update): 409
    ``Conflict``, one ``FieldManagerConflict`` cause per field and manager, worded as the API server words them, and
    nothing written. A field applied with the value it holds is shared, no conflict; a field no one else owns, or one
    new to the object (an item of a keyed list another writer does not hold), is free.

    What is compared is the stored object and the applied one merged into it, before the fields the manager no longer
    applies are removed: removing one's own field conflicts with no one, as on the server.
    """
    before = patching.fields(_scope(live, subresource), schema)
    merged = patching.apply_merge(_scope(live, subresource), _scope(body, subresource), schema)
    conflicts = sorted(
        (other[1], other[0], patching.text(path))
        for path, value in patching.fields(merged, schema).items()
        if path in before and before[path] != value
        for other in owners.get(path, ())
        if other != writer
    )
    if not conflicts:
        return

    def manager(name: str, operation: str) -> str:
        # An applier is its name; an updater its name and the version it wrote (Kubernetes' printManager).
        return gotext.quote(name) + (f" using {kind.api_version}" if operation == "Update" else "")

    causes = tuple(
        errors.StatusCause("FieldManagerConflict", f"conflict with {manager(name, op)}", field)
        for name, op, field in conflicts
    )
    if len(conflicts) == 1:
        name, op, field = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {manager(name, op)}: {field}"
    else:
        lines: list[str] = []
        for name, op, field in conflicts:
            heading = f"conflicts with {manager(name, op)}:"
            if heading not in lines:
                lines.append(heading)
            lines.append(f"- {field}")
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    raise _error(409, "Conflict", message, causes=causes)


def _owned(owners: Mapping[_Path, set[_Writer]]) -> dict[_Path, frozenset[_Writer]]:
    """Who owns what, as the API server's managedFields say it (a field no writer holds is in none of them)."""
    return {path: frozenset(writers) for path, writers in owners.items() if writers}


def _check_version(kind: kinds_mod.Kind, live: Mapping[str, Any], body: Any) -> None:
    """A body naming a ``metadata.resourceVersion`` other than the stored one is a conflict (optimistic locking),
    said as the API server says it."""
    wanted = ((body or {}).get("metadata") or {}).get("resourceVersion") if isinstance(body, Mapping) else None
    if wanted and wanted != live["metadata"].get("resourceVersion"):
        raise _error(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {_resource(kind)} "{live["metadata"].get("name")}": the object has been '
            "modified; please apply your changes to the latest version and try again",
        )
