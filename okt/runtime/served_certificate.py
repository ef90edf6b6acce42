"""A serving certificate read again where its issuer renews it: the webhook server's and ``/metrics``'.

Why this exists: whoever issues a serving certificate renews it in place — cert-manager writes the Secret, the kubelet
swaps the files mounted from it — and a server that kept the pair it read at start serves the old one until it ends,
then fails every handshake. Both of okt's TLS servers (:mod:`okt.runtime.webhook_server`, and the metrics server of
:mod:`okt.runtime.probe_server` given ``--metrics-cert-dir``) read theirs again through :class:`ServedCertificate`, one
mechanism with one set of guarantees: a changed pair is served from the next handshake once it loads; a pair that
does not load (a certificate whose key is not written yet) is never served, nor one that cannot be read: the previous
one is, said once in the logs; no key or certificate content is ever logged.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable

import structlog

from okt import errors
from okt.runtime import certs


class ServedCertificate:
    """The serving certificate and its TLS context, read again from where it is kept (a directory, a Secret).

    Why: whoever issues the certificate renews it in place (cert-manager writes the Secret, the kubelet swaps the
    mounted files), and a server that kept the pair read at start serves the old one until it ends, then fails
    every handshake. A changed pair whose key does not match is refused once, logged, and the previous pair served
    instead; a read that fails (a Secret deleted, an API server away) is logged once and the previous pair served.
    A renewed pair under another CA is served once ``trust`` has taken that CA (the API server verifies the pair
    against the caBundle: a pair served before would fail every handshake); until it has, the previous pair is, and
    ``trust`` is tried again for that pair once ``retry_after`` seconds have passed (a directory is read on every new
    connection, whose handshake would otherwise wait for the configurations' writes, one connection at a time).
    ``restore`` is given the CAs ``trust`` last took (at first the served pair's), to write them again where they
    went missing. ``what`` names the certificate in its errors and logs, written to the structlog logger ``logger``.
    """

    def __init__(
        self,
        bundle: certs.Bundle,
        read: Callable[[], certs.Bundle] | None,
        where: str = "",
        trust: Callable[[bytes], None] | None = None,
        retry_after: float = 0.0,
        restore: Callable[[bytes], None] | None = None,
        *,
        what: str = "webhook certificate",
        logger: str = "okt.webhooks",
    ) -> None:
        self.bundle = bundle
        self._what = what
        self._log = structlog.get_logger(logger)
        self._trusted = bundle.ca_pem  # what the callers must trust: the CAs trust took last
        self._restore = restore
        self._unrestored: str | None = None  # what the last restore said, while it fails
        self._context = bundle.server_context(what=what)
        self._read = read
        self._where = where
        self._trust = trust
        self._refused: certs.Bundle | None = None
        self._failure: str | None = None  # what the last read said, while reads fail
        self._untrusted: str | None = None  # what the last trust said, while a renewal's CA is not written
        self._retry_after = retry_after
        self._not_before: tuple[certs.Bundle, float] | None = None  # the pair trust refused, and when to try again
        self._reading = threading.Lock()  # one read at a time; the pair served is swapped under _lock
        self._lock = threading.Lock()

    def context(self) -> ssl.SSLContext:
        """The TLS context of the certificate served now."""
        with self._lock:
            return self._context

    def reread(self) -> ssl.SSLContext:
        """Read the certificate again and serve it from now on when it changed and loads; the context to serve."""
        if self._read is None:
            return self.context()
        with self._reading:
            try:
                bundle = self._read()
            except (errors.OktError, ValueError) as exc:
                self._read_failed(exc)
                return self.context()
            self._failure = None
            if bundle in (self.bundle, self._refused):
                return self.context()
            try:
                context = bundle.server_context(what=self._what)
            except errors.ConfigurationError as exc:
                self._refused = bundle
                self._log.warning(f"the renewed {self._what} is not served", source=self._where, error=str(exc))
                return self.context()
            trusted = bundle.ca_pem
            if self._trust is not None and bundle.ca_pem != self.bundle.ca_pem:
                refused = self._not_before
                if refused is not None and refused[0] == bundle and time.monotonic() < refused[1]:
                    return self.context()
                # The renewal's CAs, then the served pair's (the replicas that have not read it yet serve that pair),
                # each once: those that have ended verify nothing any more, and leave.
                trusted = certs.unexpired(bundle.ca_pem, self.bundle.ca_pem)
                try:
                    self._trust(trusted)
                except Exception as exc:  # the API server away, a bug: the served pair stays, a later read tries
                    self._not_trusted(exc)
                    self._not_before = (bundle, time.monotonic() + self._retry_after)
                    return self.context()
            if self._trust is None or bundle.ca_pem != self.bundle.ca_pem:
                self._trusted = trusted
            self._untrusted, self._not_before = None, None
            with self._lock:
                self.bundle, self._context, self._refused = bundle, context, None
            self._log.info(f"serving the renewed {self._what}", source=self._where)
            return context

    def restore(self) -> None:
        """Write the CAs the callers must trust again where they went missing (``restore``; nothing without it).

        Not under the read's lock: a directory's handshakes never wait for the API server. A restore racing a
        renewal's ``trust`` writes at worst the CAs trusted until then where none of them are (its writes are
        guarded by the resourceVersion read), and the next restore adds the renewal's."""
        if self._restore is None:
            return
        # A CA that has ended verifies nothing: it leaves what the callers must trust (the restore drops it where it
        # was written, keeping the CAs other replicas wrote that have not ended). Not written back: a renewal may be
        # setting what they must trust meanwhile.
        try:
            self._restore(certs.unexpired(self._trusted))
        except Exception as exc:  # the API server away, RBAC, a bug: tried again at the next interval
            said = str(exc) if isinstance(exc, errors.OktError) else type(exc).__name__
            if said != self._unrestored:
                self._unrestored = said
                self._log.warning("the webhook CA could not be checked where it is kept", error=said)
            return
        self._unrestored = None

    def _read_failed(self, exc: Exception) -> None:
        # okt's own messages name the Secret or the file, never their content; another error is said by its type.
        said = str(exc) if isinstance(exc, errors.OktError) else type(exc).__name__
        if said != self._failure:  # once, not on every read while it lasts
            self._failure = said
            self._log.warning(f"the {self._what} could not be read again: the previous one is served", error=said)

    def _not_trusted(self, exc: Exception) -> None:
        said = str(exc) if isinstance(exc, errors.OktError) else type(exc).__name__
        if said != self._untrusted:
            self._untrusted = said
            self._log.warning(
                f"the renewed {self._what}'s CA could not be written: the previous pair is served", error=said
            )
