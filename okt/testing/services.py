"""A Service's cluster IP and node ports as the API server allocates them and keeps them.

Why this exists: the API server gives every Service but an ExternalName one a cluster IP when it is created, and
never changes it after — a template that sets another one later, or an update that leaves it out, is a 422 (see
:func:`okt.testing.immutable.check`); okt's Service helper keeps the live one for that reason. A fake that allocated
none could refuse neither, so :class:`okt.testing.FakeClient` allocates one as the server does, from the service range
of okt.testing's control plane, the lowest address no other Service holds (the server picks one at random). These are
Kubernetes 1.20's rules (single-stack: ``clusterIPs`` holds one address, ``clusterIP``'s), pure functions over plain
dicts. A Service reached through its nodes' ports (``NodePort``, ``LoadBalancer``) is given a node port for each of its
ports that names none, and a ``LoadBalancer`` one whose ``externalTrafficPolicy`` is ``Local`` a
``healthCheckNodePort``: the lowest free ones of :data:`NODE_PORTS` (the server picks them at random too; none free,
the write is its 500, ``failed to allocate a nodePort: range is full``, as for a cluster IP). They stay
while a write keeps them (an apply that leaves them out keeps them: no one applied them); an update that leaves one
out gets another, as on Kubernetes 1.20 — but for the ``healthCheckNodePort``, which an update may neither change nor
leave out. A node port named that another Service holds is refused, as the server's allocator refuses it
(:func:`claim_node_ports`, a 422; :func:`claim_health_check_port`, a 500 for a health check port); a Service made
``ClusterIP`` or ``ExternalName`` without a change of its node ports loses them (and its ``externalTrafficPolicy``),
one that no longer needs a health check port (made other than ``LoadBalancer``, or its ``externalTrafficPolicy``
made ``Cluster``) its ``healthCheckNodePort``, which frees them for another Service (:func:`settle`).

What the stored Services hold is kept in :class:`Held` as each Service is stored, replaced and removed, so that a
write asks whether an address or a port is held, and finds the lowest free one, in a time that does not grow with the
number of Services stored (it scanned every stored Service for each write).

Guarantees: each function changes only the ``spec`` of the Service it is given, and only its ``clusterIP``,
``clusterIPs``, its ports' ``nodePort``, its ``healthCheckNodePort`` and its ``externalTrafficPolicy``.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import heapq
import ipaddress
from collections.abc import Callable, Collection, Container, Iterable, Mapping
from typing import Any, Generic, TypeVar

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
_ADDRESSES = range(_FIRST, SERVICE_RANGE.num_addresses - 1)
"""The indexes in :data:`SERVICE_RANGE` of the addresses handed out (its hosts but the first)."""
_T = TypeVar("_T", str, int)


class Taken(Container[_T], abc.ABC):
    """Values held (addresses, node ports) that know the lowest free one of their range without a scan."""

    @abc.abstractmethod
    def lowest(self, skip: Container[_T] = ()) -> _T:
        """The lowest value of the range neither held nor in ``skip`` (raises StopIteration when there is none)."""


class _Pool(Taken[_T], Generic[_T]):
    """Values each held by any number of Services (:meth:`FakeClient.put` stores what it is given, two Services of
    one port included), and the lowest free one of a range: every number of the range below ``_top`` is held or in
    ``_freed``, a heap of the numbers released below it (some held again since: dropped when met)."""

    def __init__(self, numbers: range, value: Callable[[int], _T], number: Callable[[_T], int | None]) -> None:
        self._held: collections.Counter[_T] = collections.Counter()
        self._numbers = numbers
        self._value: Callable[[int], _T] = value
        self._number: Callable[[_T], int | None] = number
        self._top = numbers.start
        self._freed: list[int] = []

    def __contains__(self, value: object) -> bool:
        return value in self._held

    def count(self, value: _T) -> int:
        return self._held[value]

    def hold(self, values: Iterable[_T]) -> None:
        for value in values:
            self._held[value] += 1

    def release(self, values: Iterable[_T]) -> None:
        for value in values:
            self._held[value] -= 1
            if self._held[value] <= 0:
                del self._held[value]
                number = self._number(value)
                if number is not None and number < self._top:
                    heapq.heappush(self._freed, number)

    def lowest(self, skip: Container[_T] = ()) -> _T:
        skipped: list[int] = []
        found: _T | None = None
        while self._freed and found is None:
            value = self._value(self._freed[0])
            if value in self._held:
                heapq.heappop(self._freed)
            elif value in skip:
                skipped.append(heapq.heappop(self._freed))
            else:
                found = value
        for number in skipped:
            heapq.heappush(self._freed, number)
        if found is not None:
            return found
        while self._top in self._numbers and self._value(self._top) in self._held:
            self._top += 1
        values = map(self._value, range(self._top, self._numbers.stop))
        free: _T = next(value for value in values if value not in self._held and value not in skip)
        return free


class _Others(Container[int]):
    """The node ports Services other than one hold: those held more often than by it."""

    def __init__(self, held: _Pool[int], own: Iterable[int]) -> None:
        self._held, self._own = held, collections.Counter(own)

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self._held.count(port) > self._own[port]


class _HandedOut(Taken[int]):
    """The node ports handed out so far (see :meth:`Held.not_to_allocate`): they only grow, so the lowest port not
    among them only rises. Those ``held`` are among them; once the others run out, a port is one of the free ones."""

    def __init__(self, held: _Pool[int]) -> None:
        self.ports: set[int] = set()
        self._held = held
        self._top = NODE_PORTS.start

    def __contains__(self, port: object) -> bool:
        return port in self.ports

    def lowest(self, skip: Container[int] = ()) -> int:
        while self._top in self.ports:
            self._top += 1
        for port in range(self._top, NODE_PORTS.stop):
            if port not in self.ports and port not in skip:
                return port
        return self._held.lowest(skip)


def _address(index: int) -> str:
    return str(SERVICE_RANGE.network_address + index)


def _address_index(address: str) -> int | None:
    try:
        index = int(ipaddress.IPv4Address(address)) - int(SERVICE_RANGE.network_address)
    except ValueError:
        return None
    return index if index in _ADDRESSES and _address(index) == address else None


class Held:
    """The cluster IPs and node ports the stored Services hold, told of each Service stored (:meth:`hold`) and each
    removed or replaced (:meth:`release`, with the Service as it was stored): none is allocated twice."""

    def __init__(self) -> None:
        self._ips: _Pool[str] = _Pool(_ADDRESSES, _address, _address_index)
        self._ports: _Pool[int] = _Pool(NODE_PORTS, int, lambda port: port if port in NODE_PORTS else None)
        self._handed_out = _HandedOut(self._ports)

    def hold(self, obj: Mapping[str, Any]) -> None:
        if is_service(obj):
            self._ips.hold(cluster_ips(obj))
            self._ports.hold(node_ports(obj))
            self._handed_out.ports.update(node_ports(obj))

    def release(self, obj: Mapping[str, Any] | None) -> None:
        if obj is not None and is_service(obj):
            self._ips.release(cluster_ips(obj))
            self._ports.release(node_ports(obj))

    @property
    def cluster_ips(self) -> Taken[str]:
        """The cluster IPs the stored Services hold."""
        return self._ips

    def held_by_others(self, stored: Mapping[str, Any] | None) -> Container[int]:
        """The node ports (health check ports among them) Services other than ``stored`` hold."""
        return _Others(self._ports, node_ports(stored or {}))

    def not_to_allocate(self) -> Taken[int]:
        """The node ports not to allocate: those the stored Services hold (none is allocated twice) and, until the
        range runs out, every one allocated before — the server picks a free one at random, so a port just released
        is not handed out again at once, to another Service or to the one that left it out (a port a stored Service
        held, allocated or named, counts as allocated before)."""
        return self._handed_out if len(self._handed_out.ports) < len(NODE_PORTS) else self._ports


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


def allocate_node_ports(service: dict[str, Any], in_use: Collection[int] | Taken[int]) -> None:
    """Give each port of a ``NodePort`` or ``LoadBalancer`` Service that names no ``nodePort`` the lowest one of
    :data:`NODE_PORTS` no Service holds (``in_use``, this one's ports included: an update that leaves a port's out is
    given another), and a ``LoadBalancer`` whose ``externalTrafficPolicy`` is ``Local`` its ``healthCheckNodePort``
    (which its nodes' load balancer probes). Any other Service is left as it is.

    Raises:
        okt.errors.ServerError: no port of the range is free (500, ``Internal error occurred: failed to allocate a
            nodePort: range is full``; ``a HealthCheck NodePort 0`` for a health check port), as on Kubernetes 1.20.
    """
    spec = service.get("spec")
    if not isinstance(spec, dict) or spec.get("type") not in _THROUGH_NODES:
        return
    taken = set(node_ports(service))  # and each one given here

    def free(what: str) -> int:
        try:
            port = _lowest(in_use, NODE_PORTS, taken)
        except StopIteration:
            raise _range_full(what) from None
        taken.add(port)
        return port

    for port in spec.get("ports") or ():
        if isinstance(port, dict) and not port.get("nodePort"):
            port["nodePort"] = free("nodePort")
    local = spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
    if local and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = free("HealthCheck NodePort 0")


def _range_full(what: str) -> errors.ApiError:
    """Kubernetes 1.20's answer when its allocator has nothing left: an error of its own (500), not a 4xx."""
    failed = f"failed to allocate a {what}: range is full"
    return errors.ApiError.from_status(
        500, "InternalError", f"Internal error occurred: {failed}", causes=(errors.StatusCause("", failed, ""),)
    )


def _lowest(in_use: Collection[_T] | Taken[_T], values: Iterable[_T], skip: Container[_T]) -> _T:
    """The first of ``values`` neither ``in_use`` nor in ``skip``: :meth:`Taken.lowest`, or a scan."""
    if isinstance(in_use, Taken):
        return in_use.lowest(skip)
    return next(value for value in values if value not in in_use and value not in skip)


def claim_node_ports(service: Mapping[str, Any], held: Container[int], before: Collection[int] = ()) -> None:
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


def claim_health_check_port(live: Mapping[str, Any] | None, service: Mapping[str, Any], held: Container[int]) -> None:
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
    if named and (named in held or named in own or named in node_ports(live or {})):
        failed = f"failed to allocate requested HealthCheck NodePort {named}: provided port is already allocated"
        raise errors.ApiError.from_status(
            500, "InternalError", f"Internal error occurred: {failed}", causes=(errors.StatusCause("", failed, ""),)
        )


def allocate(service: dict[str, Any], in_use: Collection[str] | Taken[str]) -> None:
    """What a create does to a Service's ``spec``: a ``clusterIP`` it names is written into ``clusterIPs`` too, one
    it names none gets the first free address of :data:`SERVICE_RANGE`; an ExternalName Service gets none.

    Raises:
        okt.errors.Invalid: the ``clusterIP`` named is another Service's (the API server's 422).
        okt.errors.ServerError: no address of the range is free (500, ``Internal error occurred: failed to allocate
            a serviceIP: range is full``).
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
        try:
            free = _lowest(in_use, map(_address, _ADDRESSES), ())
        except StopIteration:
            raise _range_full("serviceIP") from None
        spec["clusterIP"], spec["clusterIPs"] = free, [free]


def settle(live: Mapping[str, Any], new: dict[str, Any], in_use: Collection[str] | Taken[str]) -> None:
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
