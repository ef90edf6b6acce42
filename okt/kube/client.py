"""The kube edge: the only place okt talks HTTP to the Kubernetes API (through new-pykube's configured session).

Why this exists: okt needs a handful of verbs (get, list, watch, create, patch, delete) on arbitrary kinds, with
errors mapped onto okt's own tree and every request counted. pykube brings the kubeconfig handling, the auth plugins
and a tuned ``requests`` session; okt keeps its object model out of the way and speaks plain dicts.

Guarantees:

* every non-2xx answer or transport failure raises a subclass of :class:`okt.errors.ApiError` (``from_status``), with
  the original exception as ``__cause__``;
* every request is counted in :attr:`Client.stats` by verb and resource (``create configmaps``,
  ``patch memcacheds/status``): benchmarks and tests assert "0 writes" against these counters;
* the session's connection pool is large enough for the configured number of workers (no connection churn).

Caveats: one ``Client`` is shared by all workers; ``requests.Session`` is safe for concurrent requests in practice as
long as its configuration is not changed after start-up, which okt never does.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pykube
import pykube.http
import requests
import yaml

from okt import errors
from okt.kube import kinds

WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})
PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
DEFAULT_TIMEOUT = 30.0


class RequestStats:
    """Thread-safe counters of the requests a client sent, keyed by ``(verb, resource)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def record(self, verb: str, resource: str) -> None:
        with self._lock:
            self._counts[(verb, resource)] += 1

    def snapshot(self) -> collections.Counter[tuple[str, str]]:
        with self._lock:
            return collections.Counter(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    def writes(self, since: collections.Counter[tuple[str, str]] | None = None) -> int:
        return sum(n for (verb, _), n in self.delta(since).items() if verb in WRITE_VERBS)

    def by_verb(self, since: collections.Counter[tuple[str, str]] | None = None) -> dict[str, int]:
        totals: collections.Counter[str] = collections.Counter()
        for (verb, _), n in self.delta(since).items():
            totals[verb] += n
        return dict(totals)

    def delta(self, since: collections.Counter[tuple[str, str]] | None = None) -> collections.Counter[tuple[str, str]]:
        now = self.snapshot()
        if since is not None:
            now.subtract(since)
        return collections.Counter({k: v for k, v in now.items() if v})


def _resource_label(kind: kinds.Kind, subresource: str | None) -> str:
    return f"{kind.plural}/{subresource}" if subresource else kind.plural


class Client:
    """A counted, error-mapped REST client over pykube's configured HTTP session."""

    def __init__(self, config: pykube.KubeConfig, *, pool_size: int = 64, timeout: float = DEFAULT_TIMEOUT) -> None:
        adapter = pykube.http.KubernetesHTTPAdapter(config, pool_connections=4, pool_maxsize=pool_size)
        self._http = pykube.HTTPClient(config, timeout=timeout, http_adapter=adapter)
        self._base = self._http.url.rstrip("/")
        self._session: requests.Session = self._http.session
        self._session.headers["User-Agent"] = "okt"
        # requests re-reads the proxy environment on every request (about half a millisecond each); read it once.
        self._proxies = requests.utils.get_environ_proxies(self._base)
        self._verify = self._session.verify
        self._session.trust_env = False
        self._timeout = timeout
        self._kinds: dict[tuple[str, str], kinds.Kind] = dict(kinds.BUILTIN)
        self._kinds_lock = threading.Lock()
        self.stats = RequestStats()
        self.default_namespace: str = config.namespace or "default"

    # -- construction --------------------------------------------------------------------------------------------

    @classmethod
    def from_kubeconfig(
        cls, path: str | os.PathLike[str] | None = None, *, context: str | None = None, pool_size: int = 64
    ) -> Client:
        """Load a kubeconfig (``path``, else ``$KUBECONFIG``, else ``~/.kube/config``) or the in-cluster config."""
        try:
            if path is not None:
                config = pykube.KubeConfig.from_file(str(path))
            elif os.environ.get("KUBECONFIG"):
                config = pykube.KubeConfig.from_file(os.environ["KUBECONFIG"].split(os.pathsep)[0])
            elif pathlib.Path("~/.kube/config").expanduser().exists():
                config = pykube.KubeConfig.from_file(str(pathlib.Path("~/.kube/config").expanduser()))
            else:
                config = pykube.KubeConfig.from_service_account()
            if context:
                config.set_current_context(context)
            return cls(config, pool_size=pool_size)
        except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError, pykube.exceptions.PyKubeError) as exc:
            where = path or os.environ.get("KUBECONFIG") or "~/.kube/config or the in-cluster service account"
            raise errors.ConfigurationError(f"cannot load kubeconfig from {where}: {exc}") from exc

    # -- the one request function --------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float | tuple[float, float] | None = None,
    ) -> requests.Response:
        self.stats.record(verb, resource)
        url = self._base + path
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        headers = {"Content-Type": content_type} if data is not None else None
        try:
            response = self._session.request(
                method,
                url,
                params=params,
                data=data,
                headers=headers,
                stream=stream,
                timeout=timeout if timeout is not None else self._timeout,
                proxies=self._proxies,
                verify=self._verify,
            )
        except requests.RequestException as exc:
            raise errors.ApiError.from_status(0, "Unavailable", str(exc), method=method, url=path) from exc
        if response.status_code >= 400:
            raise self._error(response, method, path)
        return response

    @staticmethod
    def _error(response: requests.Response, method: str, path: str) -> errors.ApiError:
        reason, message = response.reason or "", response.text[:2000]
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("kind") == "Status":
            reason = payload.get("reason") or reason
            message = payload.get("message") or message
        response.close()
        try:
            response.raise_for_status()
        except requests.HTTPError as exc:
            error = errors.ApiError.from_status(response.status_code, reason, message, method=method, url=path)
            error.__cause__ = exc
            return error
        return errors.ApiError.from_status(response.status_code, reason, message, method=method, url=path)

    # -- kinds ---------------------------------------------------------------------------------------------------

    def resolve(self, api_version: str, kind: str) -> kinds.Kind:
        """The REST addressing of a kind: the built-in table first, then discovery (cached per process)."""
        known = self._kinds.get((api_version, kind))
        if known is not None:
            return known
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        listing = self.request("GET", path, verb="get", resource="discovery").json()
        found: kinds.Kind | None = None
        with self._kinds_lock:
            for item in listing.get("resources", []):
                if "/" in item.get("name", ""):
                    continue
                resolved = kinds.Kind(api_version, item["kind"], item["name"], bool(item.get("namespaced")))
                self._kinds.setdefault((api_version, item["kind"]), resolved)
                if item["kind"] == kind:
                    found = resolved
        if found is None:
            raise errors.ApiError.from_status(404, "NotFound", f"the server does not serve {kind} in {api_version}")
        return found

    def kind_of(self, obj: Mapping[str, Any]) -> kinds.Kind:
        return self.resolve(str(obj["apiVersion"]), str(obj["kind"]))

    # -- verbs ---------------------------------------------------------------------------------------------------

    def get(
        self, kind: kinds.Kind, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> dict[str, Any]:
        path = kind.path(name, namespace, subresource)
        result: dict[str, Any] = self.request(
            "GET", path, verb="get", resource=_resource_label(kind, subresource)
        ).json()
        return result

    def get_or_none(self, kind: kinds.Kind, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.get(kind, name, namespace)
        except errors.NotFound:
            return None

    def list(
        self, kind: kinds.Kind, namespace: str | None = None, *, label_selector: str | None = None, page_size: int = 500
    ) -> tuple[list[dict[str, Any]], str]:
        """All objects of a kind (paginated), and the list's resourceVersion to start a watch from."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": page_size}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = self.request(
                "GET", kind.collection_path(namespace), verb="list", resource=kind.plural, params=params
            ).json()
            for item in page.get("items") or []:
                item.setdefault("apiVersion", kind.api_version)
                item.setdefault("kind", kind.kind)
                items.append(item)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return items, str(meta.get("resourceVersion", ""))
            params["continue"] = meta["continue"]

    def watch(
        self,
        kind: kinds.Kind,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity_timeout: float = 330.0,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Stream watch events (``{"type": ..., "object": ...}``) until the server ends the stream.

        A stream silent for ``inactivity_timeout`` seconds raises :class:`okt.errors.Unavailable` (a frozen watch is
        never waited on forever). Bookmarks are requested and yielded, so callers keep their resourceVersion fresh.
        ``on_open`` receives the streaming response, so another thread can close it to stop the watch at once.
        """
        params: dict[str, Any] = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        if label_selector:
            params["labelSelector"] = label_selector
        response = self.request(
            "GET",
            kind.collection_path(namespace),
            verb="watch",
            resource=kind.plural,
            params=params,
            stream=True,
            timeout=(10.0, inactivity_timeout),
        )
        try:
            for line in response.iter_lines(chunk_size=None):
                if line:
                    yield json.loads(line)
        except (requests.RequestException, AttributeError, ValueError) as exc:
            # AttributeError/ValueError: the stream was closed under us by another thread (a stop).
            raise errors.ApiError.from_status(0, "Unavailable", f"watch {kind.plural}: {exc}") from exc
        finally:
            response.close()

    def create(self, obj: Mapping[str, Any], kind: kinds.Kind | None = None) -> dict[str, Any]:
        kind = kind or self.kind_of(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        result: dict[str, Any] = self.request(
            "POST", kind.collection_path(namespace), verb="create", resource=kind.plural, body=obj
        ).json()
        return result

    def patch(
        self,
        kind: kinds.Kind,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "PATCH",
            kind.path(name, namespace, subresource),
            verb="patch",
            resource=_resource_label(kind, subresource),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
        ).json()
        return result

    def replace(self, kind: kinds.Kind, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        result: dict[str, Any] = self.request(
            "PUT",
            kind.path(meta["name"], meta.get("namespace"), subresource),
            verb="update",
            resource=_resource_label(kind, subresource),
            body=obj,
        ).json()
        return result

    def delete(
        self,
        kind: kinds.Kind,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Delete; returns False when the object was already gone."""
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", kind.path(name, namespace), verb="delete", resource=kind.plural, body=body)
        except errors.NotFound:
            return False
        return True

    def server_version(self) -> str:
        info = self.request("GET", "/version", verb="get", resource="version").json()
        return str(info.get("gitVersion", f"v{info.get('major')}.{info.get('minor')}"))

    def close(self) -> None:
        self._session.close()
