"""Where the proxy between okt and the API server comes from, and what to say when it cannot be reached.

Why this exists: the proxy is chosen once, from the kubeconfig's ``proxy-url`` or else from the environment
(``HTTPS_PROXY``, ``ALL_PROXY``, in either case, unless ``NO_PROXY`` excepts the server), and a proxy that cannot be
reached failed every request with urllib3's chain of exceptions ("Max retries exceeded ... Caused by ProxyError(...
NameResolutionError(...))"), ``okt run`` with "cannot reach the Kubernetes API server": the server blamed, and the
variable that chose the proxy named nowhere. :func:`unreached` says it in words instead: which proxy, which setting
named it, and why it could not be reached.

Guarantees: a proxy's URL is said without its user and password (``http://user:secret@proxy:3128`` is said
``http://proxy:3128``); nothing here changes which proxy is chosen (``requests`` chooses it, ``NO_PROXY`` included).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import urllib.parse
from collections.abc import Mapping

import requests
import urllib3


@dataclasses.dataclass(frozen=True)
class Proxy:
    """The proxy requests to the API server go through: its ``url`` and the setting that named it (``origin``:
    ``$HTTPS_PROXY``, the kubeconfig's ``proxy-url``)."""

    url: str
    origin: str

    def shown(self) -> str:
        """The URL as it may be said: its scheme, host and port, never its user and password."""
        parts = self.parts()
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname or ''}{port}"

    def parts(self) -> urllib.parse.SplitResult:
        """The URL's parts as ``requests`` reads them: a proxy set without a scheme (``HTTPS_PROXY=10.0.0.1:3128``) is
        reached over ``http``, where :func:`urllib.parse.urlsplit` alone would read no host in it."""
        with_scheme: str = requests.utils.prepend_scheme_if_needed(self.url, "http")  # type: ignore[no-untyped-call]
        return urllib.parse.urlsplit(with_scheme)


def chosen(base: str, proxies: Mapping[str, str], *, from_kubeconfig: bool) -> Proxy | None:
    """The proxy ``requests`` sends a request to ``base`` (the API server's URL) through, given ``proxies`` (the
    client's: the kubeconfig's ``proxy-url`` when ``from_kubeconfig``, else the environment's for ``base``), with the
    setting that named it; None when the requests go straight to the server."""
    url = requests.utils.select_proxy(base, dict(proxies))
    if not url:
        return None
    if from_kubeconfig:
        return Proxy(url, "the kubeconfig's proxy-url")
    scheme = urllib.parse.urlsplit(base).scheme
    key = next((key for key in (scheme, "all") if proxies.get(key) == url), scheme)
    return Proxy(url, f"${_variable(key, url)}")


def _variable(key: str, url: str) -> str:
    """The environment variable that gave ``url`` as the proxy of ``key`` (``https``, ``all``): urllib reads the names
    in any case, the lower-case one first."""
    wanted = f"{key}_proxy"
    named = [name for name, value in os.environ.items() if name.lower() == wanted and value == url]
    return next((name for name in named if name == wanted), named[0] if named else wanted.upper())


def unreached(proxy: Proxy, exc: BaseException) -> str | None:
    """What to say of ``exc`` (a request's failure) when it is ``proxy`` that could not be reached: the proxy, the
    setting that named it, and why (its host not resolved, its connection refused, its tunnel refused); None when
    ``exc`` is no failure to reach the proxy."""
    if not isinstance(exc, requests.exceptions.ProxyError):
        return None
    host = proxy.parts().hostname or ""
    causes = list(_causes(exc))
    if any(isinstance(c, urllib3.exceptions.NameResolutionError | socket.gaierror) for c in causes):
        why = f"its host {host} cannot be resolved"
    else:
        failed = next((c for c in reversed(causes) if isinstance(c, OSError) and c.strerror), None)
        innermost = causes[-1] if causes else exc
        why = f"it cannot be connected to: {failed.strerror if failed is not None else innermost}"
    return f"cannot reach the proxy {proxy.shown()} that {proxy.origin} names: {why}"


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc``'s chain, outermost first: what it wraps (urllib3 keeps it as ``reason`` or an argument) and its
    ``__cause__``/``__context__``."""
    found: list[BaseException] = []
    pending: list[object] = [exc]
    while pending:
        current = pending.pop(0)
        if not isinstance(current, BaseException) or any(current is seen for seen in found):
            continue
        found.append(current)
        pending += [getattr(current, "reason", None), *current.args, current.__cause__, current.__context__]
    return found
