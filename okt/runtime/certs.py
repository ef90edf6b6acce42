"""The webhook server's certificates: self-signed for a local run, read from files or a Secret in a cluster.

Why this exists: the API server calls webhooks over TLS only, and verifies the serving certificate against the
``caBundle`` of the webhook configuration. A local run (``okt run`` against a test cluster, the tests) has no
certificate authority at hand, so okt makes one: a CA and a serving certificate signed by it, with the host names and
IP addresses the API server will dial as subject alternative names. In a cluster the certificate comes from whoever
issues them there (cert-manager, a Secret written at install time), mounted as files or read from the Secret.

Guarantees: the private key never reaches a disk where Linux has in-memory files (elsewhere: mode 0600 in a private
temporary directory, removed at once); no key or certificate content is ever logged; ``ca_pem`` is what a
webhook configuration's ``caBundle`` must hold (base64 of it: :meth:`Bundle.ca_bundle`).

In a cluster without a certificate issuer, :func:`for_service` keeps one self-signed certificate for the webhook
Service in a Secret (every replica serves it) and :func:`inject_ca_bundle` writes its CA into the webhook
configurations (``okt run --webhook-service``, what ``okt gen deploy`` passes), and
:func:`inject_conversion_ca_bundle` into the conversion webhooks of the operator's CRDs.

Caveats: a CA from :func:`self_signed` lives as long as its process (one year of validity, a new one on every
start), so webhook configurations written for it are valid for that run only: write them again after a restart
(``okt run --webhook-ca-file`` keeps the current CA where ``okt gen webhooks --ca-bundle`` reads it, without the
CAs that have ended: :func:`restored`). The Secret of :func:`for_service` is renewed by the first read within
:data:`RENEW_BEFORE` of its end (or after it), at a start or by a running replica (the webhook server reads it again
through :class:`ServiceSource`), which then writes the new CA into the configurations, beside the old one until it
ends (the replicas that have not read the renewal yet still serve the old certificate). A configuration replaced
without the CA gets it again from the webhook server's reload loop (``missing_only``: written only where the
replica's own CAs are missing, so replicas never undo each other). An old CA leaves once it has ended
(:func:`unexpired`), without a restart: from the Secret's ``ca.crt`` at the next read of :func:`for_service`, from
the configurations and the CA file at the next check of the reload loop (which drops the CAs that have ended where
they are, and keeps the others). Not sooner: a replica that could not read the renewal (the API
server away from it) still serves a certificate of the old CA, which verifies until that CA ends, and only then.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import ipaddress
import os
import pathlib
import ssl
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from okt import errors
from okt import names as names_mod
from okt.kube import client as kube_client
from okt.kube import kinds

VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
"""A kept self-signed certificate this close to its end (or past it) is replaced by the next start."""
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The names a generated serving certificate is valid for when none are given (the API server on the same host)."""
CERT_FILE, KEY_FILE, CA_FILE = "tls.crt", "tls.key", "ca.crt"
"""File names in a certificate directory: a ``kubernetes.io/tls`` Secret's keys, as controller-runtime reads them."""


@dataclasses.dataclass(frozen=True, repr=False)
class Bundle:
    """A serving certificate, its private key and the CA that signed it (all PEM)."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes

    def __repr__(self) -> str:
        return "Bundle(<PEM data hidden>)"

    def ca_bundle(self) -> str:
        """The ``caBundle`` value of a webhook ``clientConfig`` (base64 of the CA's PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    @contextlib.contextmanager
    def files(self) -> Iterator[tuple[pathlib.Path, pathlib.Path]]:
        """``(cert_file, key_file)`` for ``ssl``, which reads files only: anonymous in-memory files where Linux has
        them (nothing on disk; a read-only root filesystem is fine), else a private temporary directory, removed on
        exit."""
        if _memory_files_work():
            cert_fd, key_fd = (
                _memory_file("okt-webhook-cert", self.cert_pem),
                _memory_file("okt-webhook-key", self.key_pem),
            )
            try:
                yield pathlib.Path(f"/proc/self/fd/{cert_fd}"), pathlib.Path(f"/proc/self/fd/{key_fd}")
            finally:
                os.close(cert_fd)
                os.close(key_fd)
            return
        with tempfile.TemporaryDirectory(prefix="okt-webhook-") as directory:
            cert, key = pathlib.Path(directory, CERT_FILE), pathlib.Path(directory, KEY_FILE)
            cert.write_bytes(self.cert_pem)
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(self.key_pem)
            yield cert, key

    def server_context(self, *, what: str = "webhook certificate") -> ssl.SSLContext:
        """A TLS server context serving this certificate (TLS 1.2 at least); ``what`` names it in an error."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with self.files() as (cert, key):
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as exc:
                raise errors.ConfigurationError(
                    f"the {what} and key do not load or do not match: {exc.reason or exc}"
                ) from None
        return context


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    key_cert_sign=True,
    crl_sign=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    encipher_only=False,
    decipher_only=False,
)


_COMMON_NAME_MAX = 64


def self_signed(hosts: Sequence[str] = LOCAL_HOSTS, *, now: datetime.datetime | None = None) -> Bundle:
    """A new CA and a serving certificate it signed, valid for ``hosts`` (DNS names or IP addresses).

    The serving certificate's subject alternative names are exactly ``hosts``: an API server verifies the name it
    dials against them (``127.0.0.1`` for a loopback URL, ``<service>.<namespace>.svc`` for a Service).

    Raises:
        ValueError: ``hosts`` is empty.
    """
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name or IP address")
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)  # clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "okt webhook CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    # Clients verify the subject alternative names; the common name only labels the certificate, in 64 characters at
    # most (``<service>.<namespace>.svc`` can be longer: the next host, the Service's own name, fits).
    common_name = next((host for host in hosts if len(host) <= _COMMON_NAME_MAX), "okt webhook")
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Bundle(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
    )


def service_hosts(service: str, namespace: str) -> tuple[str, ...]:
    """The names an API server may dial for a Service (``svc.ns.svc`` first, the name a webhook's ``service`` uses)."""
    return (f"{service}.{namespace}.svc", service, f"{service}.{namespace}", f"{service}.{namespace}.svc.cluster.local")


def from_directory(directory: str | os.PathLike[str], *, what: str = "webhook certificate") -> Bundle:
    """The bundle in a certificate directory (``tls.crt``, ``tls.key``, optionally ``ca.crt``: a mounted Secret);
    ``what`` names it in an error.

    Without ``ca.crt`` the serving certificate is its own CA bundle (right for a self-signed certificate).

    Raises:
        okt.errors.ConfigurationError: a file is missing or unreadable.
    """
    root = pathlib.Path(directory)
    try:
        cert, key = (root / CERT_FILE).read_bytes(), (root / KEY_FILE).read_bytes()
        ca = (root / CA_FILE).read_bytes() if (root / CA_FILE).is_file() else cert
    except OSError as exc:
        message = f"cannot read the {what} in {root}: {exc.strerror or exc}"
        raise errors.ConfigurationError(message) from None
    return Bundle(cert_pem=cert, key_pem=key, ca_pem=ca)


@dataclasses.dataclass(frozen=True)
class SecretSource:
    """A serving certificate kept in the Secret ``namespace/name`` (``tls.crt``, ``tls.key``, optionally ``ca.crt``:
    cert-manager's layout), which its issuer rotates: the webhook server reads it again now and then (a ``get`` by
    name, the one permission its first read needs) and serves a rotated pair from then on."""

    client: kube_client.Client
    namespace: str
    name: str

    def read(self) -> Bundle:
        """The bundle the Secret holds now (see :func:`from_secret`)."""
        return from_secret(self.client, self.namespace, self.name)

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclasses.dataclass(frozen=True)
class ServiceSource:
    """The Service ``namespace/service``'s own certificate, kept in the Secret ``namespace/secret`` that
    :func:`for_service` makes: the webhook server reads it again now and then, as a :class:`SecretSource`, and a read
    within :data:`RENEW_BEFORE` of its end renews it there, so a process running past its renewal serves the renewed
    pair, and a replica serves the pair another replica renewed (the Secret is the one place they agree on)."""

    client: kube_client.Client
    namespace: str
    service: str
    secret: str

    def read(self) -> Bundle:
        """The bundle the Secret holds now, renewed first when it is due (see :func:`for_service`)."""
        return for_service(self.client, self.namespace, self.service, self.secret)

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.secret}"


def from_secret(client: kube_client.Client, namespace: str, name: str) -> Bundle:
    """The bundle in a Secret (``tls.crt``, ``tls.key``, optionally ``ca.crt``, as cert-manager writes them).

    Raises:
        okt.errors.ConfigurationError: the Secret is missing or lacks a key (its content is never logged).
    """
    secret = client.get_or_none(kinds.BUILTIN[("v1", "Secret")], name, namespace)
    if secret is None:
        raise errors.ConfigurationError(f"the webhook certificate Secret {namespace}/{name} does not exist")
    return _bundle_in(secret, f"{namespace}/{name}")


def _bundle_in(secret: Mapping[str, Any], where: str) -> Bundle:
    data = secret.get("data") or {}
    missing = [k for k in (CERT_FILE, KEY_FILE) if k not in data]
    if missing:
        raise errors.ConfigurationError(f"the webhook certificate Secret {where} has no {' or '.join(missing)}")
    decoded = {k: base64.b64decode(v) for k, v in data.items() if k in (CERT_FILE, KEY_FILE, CA_FILE)}
    return Bundle(decoded[CERT_FILE], decoded[KEY_FILE], decoded.get(CA_FILE, decoded[CERT_FILE]))


def for_service(
    client: kube_client.Client,
    namespace: str,
    service: str,
    secret: str,
    *,
    now: datetime.datetime | None = None,
) -> Bundle:
    """The serving certificate of the Service ``namespace/service``, shared by every replica through a Secret.

    Why: each replica of an operator answers the webhooks behind the Service, so they must serve certificates of one
    CA — the one in the configurations' ``caBundle``. The first replica to start makes a self-signed CA and
    certificate (for :func:`service_hosts`) and creates the ``kubernetes.io/tls`` Secret ``secret``; the others, every
    restart and every read again of a running server (:class:`ServiceSource`), read it. A kept certificate that ends
    within :data:`RENEW_BEFORE` of ``now``, or does not name the Service, is replaced (an update of its three keys
    only, guarded by the Secret's resourceVersion); the new ``ca.crt`` holds the new CA first, then the old CAs that
    have not ended (the replicas that have not read the renewal yet serve the old certificate). The Secret is made
    labelled :data:`okt.names.OPERATOR_LABEL` (valued with the Service's name), which the operator's own webhook of
    Secrets leaves out: it is not served yet when the Secret is made. A kept ``ca.crt``
    holding a CA that has ended is written again without it (its pair kept). Two replicas racing to create, renew or
    write it both end up serving the one the API server kept.

    Raises:
        okt.errors.ConfigurationError: the Secret exists but lacks a key, or its certificate or CA is not a PEM
            certificate (it is left as it is; its content is never logged).
        okt.errors.ApiError: the Secret could not be read or written (RBAC: get, create and update on that Secret).
    """
    secret_kind = kinds.BUILTIN[("v1", "Secret")]
    hosts = service_hosts(service, namespace)
    live = client.get_or_none(secret_kind, secret, namespace)
    renew = True
    if live is not None:
        kept = _bundle_in(live, f"{namespace}/{secret}")
        try:
            renew = needs_renewal(kept, hosts, now=now)
        except ValueError:
            # Not replaced: what it holds may be someone's, and nothing says it was ever okt's to overwrite.
            message = (
                f"the webhook certificate Secret {namespace}/{secret} holds no PEM certificate in tls.crt or ca.crt "
                "(delete it, and the next start makes a new one)"
            )
            raise errors.ConfigurationError(message) from None
        if not renew and not has_ended(kept.ca_pem, now=now):
            return kept
    if live is not None and not renew:
        # An old CA a renewal kept beside the new one has ended: no certificate it signed verifies any more, so no
        # replica is served by it (each read the renewal long since, or fails every handshake anyway). ca.crt only.
        bundle = dataclasses.replace(kept, ca_pem=unexpired(kept.ca_pem, now=now))
    else:
        bundle = self_signed(hosts, now=now)
        if live is not None:
            # The replicas started before this renewal serve the kept certificate until they read it: the caBundle
            # the new CA goes into keeps trusting the old one until it ends, or they would refuse every review.
            bundle = dataclasses.replace(bundle, ca_pem=unexpired(bundle.ca_pem, kept.ca_pem, now=now))
    data = {CERT_FILE: bundle.cert_pem, KEY_FILE: bundle.key_pem, CA_FILE: bundle.ca_pem}
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    # A renewal replaces the three keys only: the metadata (with its resourceVersion, the guard) and the other keys
    # are the live Secret's, so labels, annotations or keys another writer put there stay.
    # A new one is labelled the operator's own: the operator's webhook of Secrets, if it has one, leaves it out
    # (names_mod.OPERATOR_LABEL) — that webhook is not served before this Secret exists, and under failurePolicy
    # Fail the create would be refused at every start.
    own: dict[str, Any] = {"labels": {names_mod.OPERATOR_LABEL: service}}
    kept_metadata, kept_data = (live["metadata"], live.get("data") or {}) if live is not None else (own, {})
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {**kept_metadata, "name": secret, "namespace": namespace},
        "data": {**kept_data, **encoded},
    }
    try:
        if live is None:
            client.create(body, secret_kind)
        else:
            client.replace(secret_kind, body)
    except errors.Conflict:  # another replica created or renewed it first: serve what the server kept
        return from_secret(client, namespace, secret)
    return bundle


def has_ended(pem: bytes, *, now: datetime.datetime | None = None) -> bool:
    """Whether one of the certificates of ``pem`` has ended at ``now`` (False for what is not PEM certificates)."""
    moment = now or datetime.datetime.now(datetime.UTC)
    try:
        return any(c.not_valid_after_utc <= moment for c in x509.load_pem_x509_certificates(pem))
    except ValueError:
        return False


def unexpired(*pems: bytes, now: datetime.datetime | None = None) -> bytes:
    """The CAs of ``pems`` a caller must trust: their certificates, each once and in order, without those that have
    ended at ``now`` (PEM).

    Why dropping an ended CA is always safe: a client verifying a chain refuses a CA past its end (the API server
    does), so it verifies nothing any more; every certificate it signed is refused with it, whatever the caBundle
    says. What still verifies something is kept, however old. A part of ``pems`` that is not PEM certificates is kept
    as it is (nothing is lost that okt cannot read), and so is everything when every certificate has ended (the
    caller's own CA, which it serves: a caBundle trusting nothing helps no one)."""
    moment = now or datetime.datetime.now(datetime.UTC)
    kept: list[bytes] = []
    live = False
    for pem in pems:
        try:
            found = x509.load_pem_x509_certificates(pem)
        except ValueError:
            found = None
        if found is None:
            if pem and pem not in kept:
                kept.append(pem)
            continue
        for certificate in found:
            text = certificate.public_bytes(serialization.Encoding.PEM)
            if certificate.not_valid_after_utc > moment and text not in kept:
                kept.append(text)
                live = True
    return b"".join(kept) if live else b"".join(pems)


def needs_renewal(bundle: Bundle, hosts: Sequence[str], *, now: datetime.datetime | None = None) -> bool:
    """Whether a kept certificate must be replaced: it or its CA ends within :data:`RENEW_BEFORE` of ``now`` (or has
    ended), or it does not name every one of ``hosts``."""
    horizon = (now or datetime.datetime.now(datetime.UTC)) + RENEW_BEFORE
    cert = x509.load_pem_x509_certificate(bundle.cert_pem)
    ca = x509.load_pem_x509_certificate(bundle.ca_pem)
    if min(cert.not_valid_after_utc, ca.not_valid_after_utc) <= horizon:
        return True
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return True
    named = {*names.get_values_for_type(x509.DNSName), *map(str, names.get_values_for_type(x509.IPAddress))}
    return not set(hosts) <= named


WEBHOOK_CONFIGURATIONS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


def inject_ca_bundle(
    client: kube_client.Client,
    configuration: str,
    service: str,
    namespace: str,
    ca_bundle: str,
    kinds_: Sequence[str] = WEBHOOK_CONFIGURATIONS,
    fields: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    missing_only: bool = False,
) -> list[str]:
    """Write ``ca_bundle`` into the webhooks of the configurations named ``configuration`` that call ``service``.

    Why: the API server trusts a webhook's server only through its ``caBundle``; with a CA the operator made itself
    (:func:`for_service`) nobody else can write it, so the operator does, at start, as cert-manager's CA injector
    would. ``kinds_`` are the configuration kinds the operator has webhooks of (only those are read: its RBAC grants
    no others); a missing configuration is skipped. Only webhooks whose ``clientConfig.service`` names
    ``namespace/service`` are changed; the write is guarded by the resourceVersion read (a conflict is retried).

    ``fields``, by the path a webhook calls, are fields of that webhook written too: the ``namespaceSelector`` and
    ``objectSelector`` of the operator's scope, so the API server calls it for the objects it serves only (another
    value there is replaced: the operator's scope is the one that holds).

    ``missing_only``: a webhook whose ``caBundle`` already trusts every CA of ``ca_bundle`` (beside others: those a
    replica that has read a renewal wrote) keeps it, without those of its CAs that have ended; only one trusting less
    is written (see :func:`trusts`). What the reload loop of the webhook server restores, every replica with its
    own CAs, none undoing another's write. A CA that has ended is never written (see :func:`unexpired`).

    Returns the kinds that were changed.
    """

    def change(live: dict[str, Any]) -> dict[str, Any] | None:
        hooks = [dict(hook) for hook in live.get("webhooks") or ()]
        touched = False
        for hook in hooks:
            config = dict(hook.get("clientConfig") or {})
            if _calls(config, service, namespace):
                written = _written(config.get("caBundle"), ca_bundle, missing_only)
                if written is not None:
                    touched = True
                    hook["clientConfig"] = {**config, "caBundle": written}
                for field, value in (fields or {}).get(config["service"].get("path") or "", {}).items():
                    touched |= hook.get(field) != value
                    hook[field] = value
        return {"webhooks": hooks} if touched else None

    return [
        kind_name
        for kind_name in kinds_
        if _patch_guarded(client, client.resolve("admissionregistration.k8s.io/v1", kind_name), configuration, change)
    ]


def inject_conversion_ca_bundle(
    client: kube_client.Client,
    crds: Sequence[str],
    service: str,
    namespace: str,
    ca_bundle: str,
    *,
    missing_only: bool = False,
) -> list[str]:
    """Write ``ca_bundle`` into the conversion webhook of the CustomResourceDefinitions ``crds`` that call ``service``.

    Why: as for :func:`inject_ca_bundle` — the API server calls a conversion webhook (``spec.conversion.webhook``)
    only over TLS verified against its ``clientConfig.caBundle``. ``crds`` are the names (``<plural>.<group>``) of
    the CRDs of the reconcilers with ``converters`` (only those are read: the RBAC ``okt gen deploy`` writes names
    them). A missing CRD, or one whose conversion webhook calls another Service (a URL, cert-manager's injector),
    is skipped; a CRD already holding ``ca_bundle`` is not written; the write is guarded by the resourceVersion read
    (a conflict is retried). ``missing_only``: as for :func:`inject_ca_bundle`, a CRD whose caBundle trusts every CA
    of ``ca_bundle`` (beside others) is not written either.

    Returns the names of the CRDs that were changed.
    """

    def change(live: dict[str, Any]) -> dict[str, Any] | None:
        conversion = (live.get("spec") or {}).get("conversion") or {}
        config = (conversion.get("webhook") or {}).get("clientConfig") or {}
        written = (
            _written(config.get("caBundle"), ca_bundle, missing_only) if _calls(config, service, namespace) else None
        )
        if written is None:
            return None
        return {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": written}}}}}

    return [name for name in crds if _patch_guarded(client, kinds.CRD, name, change)]


def _written(held: Any, ca_bundle: str, missing_only: bool) -> str | None:
    """The ``caBundle`` to write where ``held`` is, None to leave it: ``ca_bundle`` without the CAs that have ended
    (see :func:`unexpired`) where it differs (``missing_only``: where it lacks one of them); else, with
    ``missing_only``, ``held`` without its CAs that have ended, when it has some (another replica's CAs that have not
    ended stay), so an old CA leaves once it verifies nothing, without a window where a served certificate is not
    trusted."""
    wanted = _without_ended(ca_bundle)
    if not (trusts(held, wanted) if missing_only else held == wanted):
        return wanted
    if missing_only and isinstance(held, str) and _certificates_of(held):
        pruned = _without_ended(held)
        return pruned if pruned != held else None
    return None


def restored(held: bytes | None, ca_pem: bytes) -> bytes | None:
    """What a place keeping the CAs ``held`` (PEM; None: nothing there) must hold now for the CAs ``ca_pem``, None to
    leave it: as a webhook's ``caBundle`` with ``missing_only`` (see :func:`inject_ca_bundle`), ``ca_pem`` without
    its CAs that have ended where ``held`` lacks one of them, else ``held`` without its CAs that have ended, when it
    has some (what the reload loop keeps in ``okt run --webhook-ca-file``)."""
    written = _written(
        None if held is None else base64.b64encode(held).decode(), base64.b64encode(ca_pem).decode(), True
    )
    return None if written is None else base64.b64decode(written)


def _without_ended(ca_bundle: str) -> str:
    """``ca_bundle`` (base64 of PEM) without its certificates that have ended; as it is when none has (or it is not
    base64 of PEM certificates)."""
    try:
        pem = base64.b64decode(ca_bundle, validate=True)
    except ValueError:
        return ca_bundle
    return base64.b64encode(unexpired(pem)).decode() if has_ended(pem) else ca_bundle


def trusts(held: Any, ca_bundle: str) -> bool:
    """Whether the ``caBundle`` ``held`` (base64 of PEM, as a webhook's ``clientConfig`` holds it) has every
    certificate of ``ca_bundle``; one that is not base64 of PEM certificates trusts none."""
    return bool(_certificates_of(ca_bundle)) and _certificates_of(ca_bundle) <= _certificates_of(held)


def _certificates_of(ca_bundle: Any) -> frozenset[bytes]:
    """The certificates (DER) of a ``caBundle``: none for one that is not base64 of PEM certificates."""
    if not isinstance(ca_bundle, str) or not ca_bundle:
        return frozenset()
    try:
        pem = base64.b64decode(ca_bundle, validate=True)
        return frozenset(c.public_bytes(serialization.Encoding.DER) for c in x509.load_pem_x509_certificates(pem))
    except ValueError:
        return frozenset()


def _calls(client_config: dict[str, Any], service: str, namespace: str) -> bool:
    """Whether a webhook ``clientConfig`` calls the Service ``namespace/service``."""
    target = client_config.get("service") or {}
    return bool(target.get("name") == service and target.get("namespace") == namespace)


def _patch_guarded(
    client: kube_client.Client,
    kind: kinds.Kind,
    name: str,
    change: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> bool:
    """Merge-patch the cluster-scoped object ``name`` with what ``change`` makes of it (None: nothing to change),
    guarded by the resourceVersion read; a conflict reads it again (5 tries). Returns whether it was written."""
    for _attempt in range(5):
        live = client.get_or_none(kind, name)
        if live is None:
            return False
        patch = change(live)
        if patch is None:
            return False
        patch["metadata"] = {"resourceVersion": live["metadata"]["resourceVersion"]}
        try:
            client.patch(kind, name, patch)
        except errors.Conflict:
            continue
        return True
    return False


def _memory_files_work() -> bool:
    return hasattr(os, "memfd_create") and pathlib.Path("/proc/self/fd").is_dir()


def _memory_file(name: str, content: bytes) -> int:
    fd: int = os.memfd_create(name, 0)
    os.write(fd, content)
    return fd


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
