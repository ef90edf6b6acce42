"""The direct request path: okt's non-streaming requests sent straight to urllib3's connection pool.

Why this exists: for every request, ``requests`` merges session settings, cookies, hooks and proxy settings, prepares
a new request object, and re-checks the TLS files on disk; pykube's adapter then re-reads the kubeconfig's
credentials. On a 2-core machine converging a thousand objects that bookkeeping costs more CPU than the HTTP itself,
and the operator competes with the API server for those cores. When the credentials cannot change while the process
runs (a bearer token, a client certificate, basic auth) and no proxy is in the way, nothing of it needs redoing:
:class:`DirectTransport` builds the headers once, asks the ``requests`` adapter once for its connection pool (the same
pool, TLS settings and connections the session uses), and sends each request with one ``urlopen`` call.

Guarantees:

* the same TLS verification as the session: the kubeconfig's CA (or ``PYKUBE_SSL_CERTIFICATE_AUTHORITY``),
  ``insecure-skip-tls-verify``, the client certificate and ``tls-server-name``;
* :meth:`DirectTransport.for_config` answers ``None`` — use the session — for credentials that refresh (``exec``
  plugins, auth providers: pykube retries them on 401), for a proxy, or when the adapter lacks the pool API;
* no retries and no redirects: a failure is the caller's to classify (:class:`okt.errors.ApiError`); the answer is
  read whole and the connection goes back to the pool.

Caveats: streaming requests (watches) stay on the session, which handles long-lived chunked bodies.
"""

from __future__ import annotations

import dataclasses
import json
import os
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

import pykube
import requests
import urllib3

TimeoutSpec = float | tuple[float, float]


@dataclasses.dataclass(frozen=True)
class TLS:
    """How a kubeconfig says to check the API server and prove who we are: what every connection to it must use.

    ``verify`` is ``True`` (the system's CAs), a CA file, or ``False`` (``insecure-skip-tls-verify``); ``cert`` the
    client certificate and key files; ``server_name`` the kubeconfig's ``tls-server-name``.
    """

    verify: bool | str = True
    cert: tuple[str, str] | None = None
    server_name: str | None = None

    @classmethod
    def of(cls, config: pykube.KubeConfig) -> TLS:
        """Read as pykube's adapter reads it (``PYKUBE_SSL_CERTIFICATE_AUTHORITY`` first, then the kubeconfig)."""
        user, cluster = config.user, config.cluster
        cert = None
        if "client-certificate" in user:
            cert = (user["client-certificate"].filename(), user["client-key"].filename())
        verify: bool | str = True
        if os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY") is not None:
            verify = os.environ["PYKUBE_SSL_CERTIFICATE_AUTHORITY"]
        elif "certificate-authority" in cluster:
            verify = cluster["certificate-authority"].filename()
        elif "insecure-skip-tls-verify" in cluster:
            verify = not cluster["insecure-skip-tls-verify"]
        return cls(verify, cert, cluster.get("tls-server-name"))

    def context(self) -> ssl.SSLContext:
        """An ``ssl`` context with these settings (for connections ``requests`` does not make: websockets)."""
        if self.verify is False:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=self.verify if isinstance(self.verify, str) else None)
        if self.cert is not None:
            context.load_cert_chain(*self.cert)
        return context


class Response:
    """An answer read whole: status, reason and body (what okt's verbs need from ``requests.Response``)."""

    __slots__ = ("content", "reason", "status_code", "url")

    def __init__(self, status_code: int, reason: str, content: bytes, url: str) -> None:
        self.status_code = status_code
        self.reason = reason
        self.content = content
        self.url = url

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def close(self) -> None:
        """Nothing to release: the body was read and the connection returned to the pool."""


class DirectTransport:
    """Sends requests with headers built once through the session adapter's own connection pool."""

    def __init__(self, pool: urllib3.HTTPConnectionPool, prefix: str, headers: Mapping[str, str]) -> None:
        self._pool = pool
        self.prefix = prefix
        """The server URL's path (a proxy in front of the API server may serve it under one)."""
        self.headers = dict(headers)
        """Sent with every request (credentials included): built once."""

    @classmethod
    def for_config(
        cls,
        config: pykube.KubeConfig,
        adapter: requests.adapters.HTTPAdapter,
        base: str,
        proxies: Mapping[str, str],
        user_agent: str,
    ) -> DirectTransport | None:
        """The direct path for ``config`` through ``adapter``'s pool, or ``None`` when the session must be used."""
        user = config.user
        refreshing = "exec" in user or "auth-provider" in user
        if refreshing or proxies or not hasattr(adapter, "build_connection_pool_key_attributes"):
            return None
        headers = {"User-Agent": user_agent, "Accept": "application/json", "Accept-Encoding": "gzip, deflate"}
        if user.get("token"):
            headers["Authorization"] = f"Bearer {user['token']}"
        elif user.get("username") and user.get("password"):
            basic = urllib3.util.make_headers(basic_auth=f"{user['username']}:{user['password']}")
            headers["Authorization"] = basic["authorization"]
        settings = TLS.of(config)
        probe = requests.Request("GET", base).prepare()
        host_params, tls = adapter.build_connection_pool_key_attributes(probe, settings.verify, settings.cert)
        pool_kwargs: dict[str, Any] = dict(tls)
        if settings.server_name:
            pool_kwargs["assert_hostname"] = pool_kwargs["server_hostname"] = settings.server_name
        pool = adapter.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)
        return cls(pool, urllib.parse.urlsplit(base).path.rstrip("/"), headers)

    def send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None,
        data: bytes | str | None,
        content_type: str,
        timeout: TimeoutSpec,
    ) -> Response:
        """One request, answered whole.

        Raises:
            urllib3.exceptions.HTTPError, OSError: the request did not get an answer.
        """
        url = self.prefix + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = self.headers if data is None else {**self.headers, "Content-Type": content_type}
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        answer = self._pool.urlopen(
            method,
            url,
            body=data.encode() if isinstance(data, str) else data,
            headers=headers,
            retries=False,
            redirect=False,
            timeout=urllib3.Timeout(connect=connect, read=read),
            preload_content=True,
            assert_same_host=False,
        )
        return Response(answer.status, answer.reason or "", answer.data, url)
