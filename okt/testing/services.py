"""A Service's cluster IP and node ports as the API server allocates them and keeps them.

Why this exists: the API server gives every Service but an ExternalName one a cluster IP when it is created, and
never changes it after — a template that sets another one later, or an update that leaves it out, is a 422 (see
:func:`okt.testing.immutable.check`); okt's Service helper keeps the live one for that reason. A fake that allocated
none could refuse neither, so :class:`okt.testing.FakeClient` allocates one as the server does, from the service range
of okt.testing's control plane, the lowest address no other Service holds (the server picks one at random). These are
Kubernetes 1.20's rules (single-stack: ``clusterIPs`` holds one address, ``clusterIP``'s), pure functions over plain
dicts. A Service reached through its nodes' ports (``NodePort``, ``LoadBalancer``) is given a node port for each of its
ports that names none, and a ``LoadBalancer`` one whose ``externalTrafficPolicy`` is ``Local`` a
``healthCheckNodePort``: the lowest free ones of :data:`NODE_PORTS` (the server picks them at random too). They stay
while a write keeps them (an apply that leaves them out keeps them: no one applied them); an update that leaves one
out gets another, as on Kubernetes 1.20 — but for the ``healthCheckNodePort``, which an update may neither change nor
leave out. A node port named that another Service holds is refused, as the server's allocator refuses it
(:func:`claim_node_ports`, a 422; :func:`claim_health_check_port`, a 500 for a health check port); a Service made
``ClusterIP`` or ``ExternalName`` without a change of its node ports loses them (and its ``externalTrafficPolicy``),
one that no longer needs a health check port (made other than ``LoadBalancer``, or its ``externalTrafficPolicy``
made ``Cluster``) its ``healthCheckNodePort``, which frees them for another Service (:func:`settle`).

Guarantees: each function changes only the ``spec`` of the Service it is given, and only its ``clusterIP``,
``clusterIPs``, its ports' ``nodePort``, its ``healthCheckNodePort`` and its ``externalTrafficPolicy``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Collection, Mapping
from typing import Any

from okt import errors
from okt.kube import kinds
from okt.testing import metadata, validation

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")
"""The range cluster IPs are allocated from: okt.testing's control plane's ``--service-cluster-ip-range``."""
NODE_PORTS = range(30000, 32768)
"""The range node ports are allocated from: the API server's default ``--service-node-port-range``."""
_FIRST = 2
"""The first address handed out: the range's first host is the ``kubernetes`` Service's."""
_SERVICE = kinds.BUILTIN[("v1", "Service")]
_THROUGH_NODES = ("NodePort", "LoadBalancer")
"""The types of Service reached through their nodes' ports: only they hold node ports."""


def is_service(obj: Mapping[str, Any]) -> bool:
    return (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Service")


def cluster_ips(obj: Mapping[str, Any]) -> list[str]:
    """The cluster IPs ``obj`` holds (none but a Service's)."""
    if not is_service(obj):
        return []
    return [str(ip) for ip in (obj.get("spec") or {}).get("clusterIPs") or () if ip != "None"]


def node_ports(obj: Mapping[str, Any]) -> list[int]:
    """The node ports ``obj`` holds, its health check node port included (none but a Service's)."""
    if not is_service(obj):
        return []
    spec = obj.get("spec") or {}
    found = [port.get("nodePort") for port in spec.get("ports") or () if isinstance(port, Mapping)]
    found.append(spec.get("healthCheckNodePort"))
    return [port for port in found if isinstance(port, int) and port]


def allocate_node_ports(service: dict[str, Any], in_use: Collection[int]) -> None:
    """Give each port of a ``NodePort`` or ``LoadBalancer`` Service that names no ``nodePort`` the lowest one of
    :data:`NODE_PORTS` no Service holds (``in_use``, this one's ports included: an update that leaves a port's out is
    given another), and a ``LoadBalancer`` whose ``externalTrafficPolicy`` is ``Local`` its ``healthCheckNodePort``
    (which its nodes' load balancer probes). Any other Service is left as it is."""
    spec = service.get("spec")
    if not isinstance(spec, dict) or spec.get("type") not in _THROUGH_NODES:
        return
    taken = {*in_use, *node_ports(service)}
    free = (port for port in NODE_PORTS if port not in taken)
    for port in spec.get("ports") or ():
        if isinstance(port, dict) and not port.get("nodePort"):
            port["nodePort"] = next(free)
    local = spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
    if local and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = next(free)


def claim_node_ports(service: Mapping[str, Any], held: Collection[int], before: Collection[int] = ()) -> None:
    """Refuse the node ports ``service`` names as the API server's allocator does: one it names twice (its ports'
    ``nodePort``), or one another Service holds (``held``: the others' ports, their ``healthCheckNodePort`` among
    them) that it did not hold already (``before``: the ports of the stored Service an update replaces).

    Raises:
        okt.errors.Invalid: the first port refused, as Kubernetes 1.20 names it (``spec.ports[1].nodePort:
            Duplicate value: 30300``, ``spec.ports[0].nodePort: Invalid value: 30100: provided port is already
            allocated``).
    """
    spec = service.get("spec")
    if not isinstance(spec, Mapping) or spec.get("type") not in _THROUGH_NODES:
        return
    seen: set[int] = set()
    for index, port in enumerate(spec.get("ports") or ()):
        number = port.get("nodePort") if isinstance(port, Mapping) else None
        if not isinstance(number, int) or not number:
            continue
        if number in seen:
            refused = errors.StatusCause("FieldValueDuplicate", f"Duplicate value: {number}", "")
        elif number in held and number not in before:
            message = f"Invalid value: {number}: provided port is already allocated"
            refused = errors.StatusCause("FieldValueInvalid", message, "")
        else:
            seen.add(number)
            continue
        cause = dataclasses.replace(refused, field=f"spec.ports[{index}].nodePort")
        raise errors.ApiError.from_status(
            422,
            "Invalid",
            f"{metadata.invalid(_SERVICE, service)}: {cause.field}: {cause.message}",
            causes=(cause,),
        )


def claim_health_check_port(live: Mapping[str, Any] | None, service: Mapping[str, Any], held: Collection[int]) -> None:
    """Refuse the ``healthCheckNodePort`` ``service`` names as Kubernetes 1.20 does, after its node ports are
    claimed: an update of a Service that keeps needing one (:func:`okt.testing.validation.needs_health_check`) may
    not change it, nor leave it out (``live``: the stored Service, None for a create); a Service that comes to need
    one (created, or updated into it) may name one only if no Service holds it as a node port or a health check port
    (``held``: the others'), nor it itself as a node port of its ports or the ports it held.

    Raises:
        okt.errors.Invalid: a change of the port (``spec.healthCheckNodePort: Invalid value: 30200: cannot change
            healthCheckNodePort on loadBalancer service with externalTraffic=Local during update``).
        okt.errors.ServerError: a port held (500, ``Internal error occurred: failed to allocate requested HealthCheck
            NodePort 30100: provided port is already allocated``: the server's allocator fails it as an error of its
            own, not as a 4xx, unlike a node port).
    """
    if not is_service(service) or not validation.needs_health_check(service):
        return
    named = (service.get("spec") or {}).get("healthCheckNodePort") or 0
    if live is not None and validation.needs_health_check(live):
        if named != ((live.get("spec") or {}).get("healthCheckNodePort") or 0):
            field = "spec.healthCheckNodePort"
            message = (
                f"Invalid value: {named}: cannot change healthCheckNodePort on loadBalancer service with "
                "externalTraffic=Local during update"
            )
            raise errors.ApiError.from_status(
                422,
                "Invalid",
                f"{metadata.invalid(_SERVICE, service)}: {field}: {message}",
                causes=(errors.StatusCause("FieldValueInvalid", message, field),),
            )
        return
    own = [port.get("nodePort") for port in (service.get("spec") or {}).get("ports") or () if isinstance(port, Mapping)]
    if named and named in {*held, *own, *node_ports(live or {})}:
        failed = f"failed to allocate requested HealthCheck NodePort {named}: provided port is already allocated"
        raise errors.ApiError.from_status(
            500, "InternalError", f"Internal error occurred: {failed}", causes=(errors.StatusCause("", failed, ""),)
        )


def allocate(service: dict[str, Any], in_use: Collection[str]) -> None:
    """What a create does to a Service's ``spec``: a ``clusterIP`` it names is written into ``clusterIPs`` too, one
    it names none gets the first free address of :data:`SERVICE_RANGE`; an ExternalName Service gets none.

    Raises:
        okt.errors.Invalid: the ``clusterIP`` named is another Service's (the API server's 422).
    """
    spec = service.setdefault("spec", {})
    if not isinstance(spec, dict) or spec.get("type") == "ExternalName":
        return
    named = spec.get("clusterIP") or ""
    if named and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [named]
    if named in in_use:
        value = '[]string{"' + named + '"}'
        message = f"Invalid value: {value}: failed to allocated ip:{named} with error:provided IP is already allocated"
        name = (service.get("metadata") or {}).get("name", "")
        raise errors.ApiError.from_status(
            422,
            "Invalid",
            f'Service "{name}" is invalid: spec.clusterIPs: {message}',
            causes=(errors.StatusCause("FieldValueInvalid", message, "spec.clusterIPs"),),
        )
    if not named and not spec.get("clusterIPs"):
        free = next(
            str(ip)
            for index, ip in enumerate(SERVICE_RANGE.hosts(), start=1)
            if index >= _FIRST and str(ip) not in in_use
        )
        spec["clusterIP"], spec["clusterIPs"] = free, [free]


def settle(live: Mapping[str, Any], new: dict[str, Any], in_use: Collection[str]) -> None:
    """What an update does to a Service's cluster IPs before it is validated (Kubernetes' ``normalizeClusterIPs``):
    ``clusterIPs`` left out while ``clusterIP`` is kept is given back; a ``clusterIP`` cleared or changed while
    ``clusterIPs`` is kept takes ``clusterIPs`` along (so the refusal names ``spec.clusterIPs[0]``, as the server's
    does). A Service made ExternalName loses its cluster IPs; one made something else gets one allocated. The fields
    of a type the Service is no longer are dropped where the write left them as they were (Kubernetes'
    ``dropTypeDependentFields``): made neither ``NodePort`` nor ``LoadBalancer``, its ports' node ports and its
    ``externalTrafficPolicy``. One that needed a ``healthCheckNodePort`` and needs none now loses it, whatever the
    write said."""
    was, now = live.get("spec") or {}, new.get("spec")
    if not isinstance(now, dict):
        return
    _drop_type_dependent(was, now)
    old_ip, new_ip = was.get("clusterIP") or "", now.get("clusterIP") or ""
    old_ips = list(was.get("clusterIPs") or [])
    if old_ips and not now.get("clusterIPs") and old_ip == new_ip:
        now["clusterIPs"] = old_ips
    if old_ip != new_ip and list(now.get("clusterIPs") or []) == old_ips:
        if old_ip and not new_ip:
            now.pop("clusterIPs", None)
        else:
            now["clusterIPs"] = [new_ip]
    if not now.get("clusterIPs"):
        now.pop("clusterIPs", None)
    if not new_ip:
        now.pop("clusterIP", None)
    if now.get("type") == "ExternalName" and was.get("type") != "ExternalName":
        now.pop("clusterIP", None)
        now.pop("clusterIPs", None)
    elif was.get("type") == "ExternalName" and now.get("type") != "ExternalName":
        allocate(new, in_use)


def drop_external_traffic_policy(live: Mapping[str, Any], new: dict[str, Any]) -> None:
    """What an update making a Service neither ``NodePort`` nor ``LoadBalancer`` does to its
    ``externalTrafficPolicy`` once it has passed validation, before the server checks what its type may hold
    (Kubernetes 1.20's ``externalTrafficPolicyUpdate``): drops it, even one the write changed (which :func:`settle`
    keeps, so that an unknown one is refused first)."""
    was, now = live.get("spec") or {}, new.get("spec")
    if isinstance(now, dict) and was.get("type") in _THROUGH_NODES and now.get("type") not in _THROUGH_NODES:
        now.pop("externalTrafficPolicy", None)


def _drop_type_dependent(was: Mapping[str, Any], now: dict[str, Any]) -> None:
    old_type, new_type = was.get("type"), now.get("type")
    if old_type in _THROUGH_NODES and new_type not in _THROUGH_NODES:
        ports = [port for port in now.get("ports") or () if isinstance(port, dict)]
        if sorted(_numbers(was.get("ports"))) == sorted(_numbers(ports)):
            for port in ports:
                port.pop("nodePort", None)
        if now.get("externalTrafficPolicy") == was.get("externalTrafficPolicy"):
            now.pop("externalTrafficPolicy", None)
    # One that needed a health check port and needs none now loses it, whatever the write said (Kubernetes 1.20's
    # healthCheckNodePortUpdate, after its validation): an externalTrafficPolicy made Cluster frees it too.
    if validation.needs_health_check({"spec": was}) and not validation.needs_health_check({"spec": now}):
        now.pop("healthCheckNodePort", None)


def _numbers(ports: Any) -> list[int]:
    """The node ports of ``ports``, 0 for each that names none: a bag, compared whatever the order."""
    return [port.get("nodePort") or 0 for port in ports or () if isinstance(port, Mapping)]
