"""Bearer tokens that change while the operator runs: a file someone else rewrites (the in-cluster ServiceAccount
token, a kubeconfig's ``tokenFile``) and a kubeconfig's credential plugin (``exec``).

Why this exists: a Pod's ServiceAccount token is a projected, bound token. It expires (an hour as the kubelet asks for
it; up to a year where the API server extends it for old clients, 90 days on some managed clusters) and the kubelet
writes a fresh one into the same file well before that. A client that read the file once at start keeps sending the
first token: once it expired or was invalidated, every request is refused with 401 while the process looks healthy,
and the operator has silently stopped. client-go reads such a file again at most once a minute; okt does the same,
and reads it at once when the API server refused the token it sent. A credential plugin (``aws eks get-token``,
``gke-gcloud-auth-plugin``, ``kubelogin``: how a developer's kubeconfig reaches a managed cluster) takes a good part
of a second to run; run for every request, as pykube does, it turns a reconcile into seconds. client-go runs it once,
keeps its token until the expiry the plugin gives, and runs it again when the API server refuses that token; so does
:class:`ExecToken`.

Guarantees of :class:`TokenFile`:

* the file is read at most once per ``period`` seconds, and at once on :meth:`TokenFile.renew`;
* surrounding whitespace is dropped (a trailing newline is common); a token that could not be a header value (empty,
  inner whitespace or control characters, not Latin-1) is never used;
* a read that fails, or finds no usable token (a file being rewritten), keeps the last good token and says so once
  per distinct failure (:class:`TokenFileWarning`); only the first read must succeed;
* the token itself never appears in a message.

Guarantees of :class:`ExecToken`: the plugin runs without a terminal (``interactive: false``; a plugin that insists on
one is a :class:`okt.errors.ConfigurationError`), with the kubeconfig's ``env`` and, when it asks for it
(``provideClusterInfo``), the cluster in ``KUBERNETES_EXEC_INFO``; it runs again only once its token is within
:data:`EXPIRY_MARGIN` seconds of the expiry it gave, or on :meth:`ExecToken.renew`, one run at a time; a plugin that
fails, times out or answers something else than a token says so in the error (its stderr's end and the kubeconfig's
``installHint``).

A plugin may answer with a client certificate (``clientCertificateData`` and ``clientKeyData``: Teleport's ``tsh``)
instead of a token, or beside one. client-go runs such a plugin once too, keeps its certificate until the expiry it
gives or a 401, and keeps one transport; pykube's session ran it for every request, and wrote the certificate to two
new files each time, so every request also opened a new connection (a TLS handshake, through a proxy a new tunnel).
:class:`ExecToken` keeps it as it keeps a token (:meth:`ExecToken.certificate`): in files of mode 0600 in a folder of
its own (removed when it is collected or the process exits), written anew only when the plugin gives another
certificate, so the connections made with one are kept while it holds; a token given beside it is sent as well, as
client-go sends both.
"""

from __future__ import annotations

import abc
import base64
import datetime
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from okt import errors

PERIOD = 60.0
"""Seconds a token read from the file is used before the file is read again (client-go's period)."""
EXPIRY_MARGIN = 10.0
"""Seconds before a plugin's token expires that the plugin is run again (no request leaves with a token that expires
on the way)."""
PLUGIN_TIMEOUT = 120.0
"""Seconds a credential plugin may take (a cloud CLI may first refresh its own session)."""
EXEC_VERSIONS = frozenset(f"client.authentication.k8s.io/{v}" for v in ("v1", "v1beta1", "v1alpha1"))


class TokenSource(Protocol):
    """Where the client's bearer token comes from when it can change while the process runs."""

    def token(self) -> str | None:
        """The token to send now (None: a credential plugin's client certificate is all there is)."""
        ...

    def renew(self, refused: str | None = None) -> bool:
        """The API server refused ``refused`` (None: the token in hand): get a token afresh, unless the one in hand
        already differs from it (another request renewed it meanwhile); whether the one in hand now differs."""
        ...


class _Renewed(abc.ABC):
    """The renewal both sources share: a token in hand under a lock, fetched afresh by ``_fetch_locked``."""

    _token: str | None
    _lock: threading.Lock

    def renew(self, refused: str | None = None) -> bool:
        """Get a token afresh, the API server having refused ``refused`` (None: the credential in hand) — unless the
        token in hand already differs from it (requests refused together renew once); whether the credential in hand
        now differs from the refused one.

        Raises:
            okt.errors.Unauthorized: a credential plugin, run again, gave no token.
        """
        with self._lock:
            held = self._held()
            if refused is None or self._token == refused:
                self._fetch_locked()
            return self._held() != held if refused is None else self._token != refused

    def _held(self) -> object:
        """What the credential in hand is told apart by (the token; a plugin's certificate too)."""
        return self._token

    @abc.abstractmethod
    def _fetch_locked(self) -> None:
        """Get the token afresh into ``_token`` (the lock held)."""


class TokenFileWarning(UserWarning):
    """The token file could not be read again, or held no usable token: the last good token is still used."""


def _usable(text: str) -> str:
    """The token in ``text`` (whitespace around it dropped), or a ValueError saying why there is none."""
    token = text.strip()
    if not token:
        raise ValueError("it is empty")
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in token):
        raise ValueError("the token holds whitespace or control characters")
    try:
        token.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("the token holds characters a header cannot carry") from None
    return token


class TokenFile(_Renewed):
    """The bearer token in ``path``, read again when it is ``period`` seconds old or when asked to."""

    _token: str

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        period: float = PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Read the file now.

        Raises:
            okt.errors.ConfigurationError: the file cannot be read or holds no usable token.
        """
        self.path = pathlib.Path(path)
        self._period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._failure = ""
        try:
            self._token = _usable(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise errors.ConfigurationError(f"cannot read a bearer token from {self.path}: {exc}") from exc
        self._read_at = clock()

    def token(self) -> str:
        """The current token: the file is read again first when the token in hand is ``period`` seconds old."""
        if self._clock() - self._read_at < self._period:
            return self._token
        with self._lock:
            if self._clock() - self._read_at >= self._period:
                self._fetch_locked()
            return self._token

    def _fetch_locked(self) -> None:
        """Read the file again (its renewal)."""
        self._read_at = self._clock()
        try:
            self._token = _usable(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            failure = f"{type(exc).__name__}: {exc}"
            if failure != self._failure:
                warnings.warn(
                    f"cannot read the bearer token again from {self.path} ({failure}); the last one read is used",
                    TokenFileWarning,
                    stacklevel=2,
                )
            self._failure = failure
        else:
            self._failure = ""


def _plugin_failure(what: str, hint: str | None) -> errors.ConfigurationError:
    return errors.ConfigurationError(what + (f" ({hint.strip()})" if hint else ""))


def _expiry(value: object) -> datetime.datetime | None:
    """A plugin's ``expirationTimestamp`` (RFC 3339, so with a time zone); ValueError for what is not one — a time
    without a zone could not be compared with the clock, and every request would fail on it."""
    if not value:
        return None
    try:
        expires = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"expirationTimestamp {value!r} is not a time") from None
    if expires.tzinfo is None:
        raise ValueError(f"expirationTimestamp {value!r} has no time zone (RFC 3339 asks for one, such as Z)")
    return expires


class ExecToken(_Renewed):
    """The bearer token or client certificate a kubeconfig's credential plugin (``user.exec``) gives, kept until it
    expires."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        cluster: Mapping[str, Any] | None = None,
        kubeconfig: pathlib.Path | None = None,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        """Run the plugin once now. ``cluster``: the kubeconfig's cluster (given to a plugin that asks for it);
        ``kubeconfig``: where the kubeconfig is (a relative command is found from its folder).

        Raises:
            okt.errors.ConfigurationError: the plugin cannot run, fails, or gives neither a token nor a client
                certificate and its key.
        """
        self._spec = dict(spec)
        self._version = str(spec.get("apiVersion") or "")
        if self._version not in EXEC_VERSIONS:
            raise errors.ConfigurationError(
                f"credential plugin apiVersion {self._version!r} is not one of {', '.join(sorted(EXEC_VERSIONS))}"
            )
        if spec.get("interactiveMode") == "Always":
            raise errors.ConfigurationError(
                f"the credential plugin {spec.get('command')!r} needs a terminal (interactiveMode: Always); an "
                "operator runs without one"
            )
        self._command = self._resolve(str(spec.get("command") or ""), kubeconfig)
        self._cluster = dict(cluster or {})
        self._clock = clock
        self._lock = threading.Lock()
        self._folder: pathlib.Path | None = None
        self._given: tuple[str, str] | None = None
        """The certificate and key the plugin last gave (PEM): new files are written only for another."""
        self._files: tuple[str, str] | None = None
        self._written = 0
        self._token, certificate, self._expires = self._run()
        self._keep(certificate)

    def token(self) -> str | None:
        """The plugin's token (None: it gives a client certificate only), the plugin run again first when it is
        within :data:`EXPIRY_MARGIN` of its expiry.

        Raises:
            okt.errors.Unauthorized: the plugin, run again, gave no token (the request cannot be sent as anyone).
        """
        with self._lock:
            if self._expired():
                self._fetch_locked()
            return self._token

    def certificate(self) -> tuple[str, str] | None:
        """The files of the client certificate and key the plugin gives (None: it gives a token only), the plugin
        run again first when it is within :data:`EXPIRY_MARGIN` of its expiry: the same files while it gives the same
        certificate, so the connections made with them are kept.

        Raises:
            okt.errors.Unauthorized: the plugin, run again, gave nothing usable.
        """
        with self._lock:
            if self._expired():
                self._fetch_locked()
            return self._files

    def _held(self) -> object:
        return self._token, self._files

    def _fetch_locked(self) -> None:
        """Run the plugin again (renewed, or its credential expired). Its failure is the request's (an API error the
        caller retries with backoff), not a mistake of the configuration that worked at start."""
        try:
            self._token, certificate, self._expires = self._run()
        except errors.ConfigurationError as exc:
            raise errors.ApiError.from_status(401, "Unauthorized", str(exc)) from exc
        self._keep(certificate)

    def _keep(self, certificate: tuple[str, str] | None) -> None:
        """Hold ``certificate`` (PEM certificate and key) in files only this user can read, written anew only when it
        is another than the one held. The files of the one before stay a while (a connection being made may still be
        reading them); older ones are removed."""
        if certificate == self._given:
            return
        self._given = certificate
        if certificate is None:
            self._files = None
            return
        if self._folder is None:
            self._folder = pathlib.Path(tempfile.mkdtemp(prefix="okt-exec-"))
            weakref.finalize(self, shutil.rmtree, self._folder, ignore_errors=True)
        self._written += 1
        files = []
        for kind, pem in zip(("crt", "key"), certificate, strict=True):
            path = self._folder / f"{self._written}.{kind}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(pem)
            files.append(str(path))
            (self._folder / f"{self._written - 2}.{kind}").unlink(missing_ok=True)
        self._files = (files[0], files[1])

    def _expired(self) -> bool:
        return self._expires is not None and self._clock() >= self._expires - datetime.timedelta(seconds=EXPIRY_MARGIN)

    def _resolve(self, command: str, kubeconfig: pathlib.Path | None) -> str:
        """``command`` as client-go finds it: a path with a folder in it from the kubeconfig's folder, else on PATH."""
        hint = self._spec.get("installHint")
        if not command:
            raise _plugin_failure("the credential plugin has no command", hint)
        if os.sep in command and not os.path.isabs(command) and kubeconfig is not None:
            command = str(kubeconfig.parent / command)
        found = shutil.which(command)
        if found is None:
            raise _plugin_failure(f"the credential plugin {command!r} is not found", hint)
        return found

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self._spec.get("provideClusterInfo"):
            cluster: dict[str, Any] = {"server": self._cluster.get("server", "")}
            for key, field in (
                ("tls-server-name", "tls-server-name"),
                ("insecure-skip-tls-verify", "insecure-skip-tls-verify"),
            ):
                if key in self._cluster:
                    cluster[field] = self._cluster[key]
            authority = self._cluster.get("certificate-authority")
            if authority is not None:
                data = authority.bytes() if hasattr(authority, "bytes") else pathlib.Path(str(authority)).read_bytes()
                cluster["certificate-authority-data"] = base64.b64encode(data).decode()
            spec["cluster"] = cluster
        return json.dumps({"apiVersion": self._version, "kind": "ExecCredential", "spec": spec})

    def _run(self) -> tuple[str | None, tuple[str, str] | None, datetime.datetime | None]:
        """Run the plugin: its token, its client certificate and key (PEM), and when they expire."""
        hint = self._spec.get("installHint")
        env = dict(os.environ)
        env.update({str(item["name"]): str(item["value"]) for item in self._spec.get("env") or ()})
        env["KUBERNETES_EXEC_INFO"] = self._exec_info()
        argv = [self._command, *(str(arg) for arg in self._spec.get("args") or ())]
        try:
            done = subprocess.run(  # noqa: S603 - the kubeconfig's own plugin, as kubectl runs it
                argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=PLUGIN_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _plugin_failure(f"the credential plugin {argv[0]!r} did not run: {exc}", hint) from exc
        said = done.stderr.decode(errors="replace").strip()[-500:]
        if done.returncode != 0:
            raise _plugin_failure(f"the credential plugin {argv[0]!r} exited with {done.returncode}: {said}", hint)
        try:
            answer = json.loads(done.stdout)
            status = answer.get("status") or {}
            if answer.get("apiVersion") != self._version or answer.get("kind") != "ExecCredential":
                raise ValueError(f"it answered {answer.get('kind')} {answer.get('apiVersion')}, not {self._version}")
            expires = _expiry(status.get("expirationTimestamp"))
            certificate = _certificate(status)
            token = _usable(str(status.get("token") or "")) if status.get("token") or certificate is None else None
        except (ValueError, AttributeError) as exc:
            raise _plugin_failure(f"the credential plugin {argv[0]!r} gave no usable token: {exc}", hint) from exc
        return token, certificate, expires


def _certificate(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """A plugin's ``clientCertificateData`` and ``clientKeyData`` (PEM), None for neither; ValueError for one
    without the other (client-go refuses it too)."""
    certificate, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not certificate and not key:
        return None
    if not (isinstance(certificate, str) and certificate and isinstance(key, str) and key):
        raise ValueError("clientCertificateData and clientKeyData must both be given")
    return certificate, key
