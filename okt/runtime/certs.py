"""The webhook server's certificates: self-signed for a local run, read from files or a Secret in a cluster.

Why this exists: the API server calls webhooks over TLS only, and verifies the serving certificate against the
``caBundle`` of the webhook configuration. A local run (``okt run`` against a test cluster, the tests) has no
certificate authority at hand, so okt makes one: a CA and a serving certificate signed by it, with the host names and
IP addresses the API server will dial as subject alternative names. In a cluster the certificate comes from whoever
issues them there (cert-manager, a Secret written at install time), mounted as files or read from the Secret.

Guarantees: the private key never reaches a disk where Linux has in-memory files (elsewhere: mode 0600 in a private
temporary directory, removed at once); no key or certificate content is ever logged; ``ca_pem`` is what a
webhook configuration's ``caBundle`` must hold (base64 of it: :meth:`Bundle.ca_bundle`).

Caveats: a generated CA lives as long as its process (one year of validity, a new one on every start), so webhook
configurations written for it are valid for that run only: write them again after a restart (``okt run
--webhook-ca-file`` keeps the current CA where ``okt gen webhooks --ca-bundle`` reads it).
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
from collections.abc import Iterator, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from okt import errors
from okt.kube import client as kube_client
from okt.kube import kinds

VALIDITY = datetime.timedelta(days=365)
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

    def server_context(self) -> ssl.SSLContext:
        """A TLS server context serving this certificate (TLS 1.2 at least)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with self.files() as (cert, key):
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as exc:
                raise errors.ConfigurationError(
                    f"the webhook certificate and key do not load or do not match: {exc.reason or exc}"
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
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
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


def from_directory(directory: str | os.PathLike[str]) -> Bundle:
    """The bundle in a certificate directory (``tls.crt``, ``tls.key``, optionally ``ca.crt``: a mounted Secret).

    Without ``ca.crt`` the serving certificate is its own CA bundle (right for a self-signed certificate).

    Raises:
        okt.errors.ConfigurationError: a file is missing or unreadable.
    """
    root = pathlib.Path(directory)
    try:
        cert, key = (root / CERT_FILE).read_bytes(), (root / KEY_FILE).read_bytes()
        ca = (root / CA_FILE).read_bytes() if (root / CA_FILE).is_file() else cert
    except OSError as exc:
        message = f"cannot read the webhook certificate in {root}: {exc.strerror or exc}"
        raise errors.ConfigurationError(message) from None
    return Bundle(cert_pem=cert, key_pem=key, ca_pem=ca)


def from_secret(client: kube_client.Client, namespace: str, name: str) -> Bundle:
    """The bundle in a Secret (``tls.crt``, ``tls.key``, optionally ``ca.crt``, as cert-manager writes them).

    Raises:
        okt.errors.ConfigurationError: the Secret is missing or lacks a key (its content is never logged).
    """
    secret = client.get_or_none(kinds.BUILTIN[("v1", "Secret")], name, namespace)
    if secret is None:
        raise errors.ConfigurationError(f"the webhook certificate Secret {namespace}/{name} does not exist")
    data = secret.get("data") or {}
    missing = [k for k in (CERT_FILE, KEY_FILE) if k not in data]
    if missing:
        raise errors.ConfigurationError(
            f"the webhook certificate Secret {namespace}/{name} has no {' or '.join(missing)}"
        )
    decoded = {k: base64.b64decode(v) for k, v in data.items() if k in (CERT_FILE, KEY_FILE, CA_FILE)}
    return Bundle(decoded[CERT_FILE], decoded[KEY_FILE], decoded.get(CA_FILE, decoded[CERT_FILE]))


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
