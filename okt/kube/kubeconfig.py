"""Reading a kubeconfig as kubectl reads it: one file or ``$KUBECONFIG``'s list merged, and where the token comes from.

Why this exists: pykube reads one kubeconfig document, and says little when it is not one (``argument of type
'NoneType' is not iterable`` of an empty file), merges nothing, and reads a context naming an undefined user as no user
at all — every request anonymous. :class:`okt.kube.client.Client` reads its configuration through these functions:
a file that holds no kubeconfig is refused with one line that never quotes it (it may hold a credential),
``$KUBECONFIG``'s files are merged by kubectl's rules (:func:`read_listed`), a current context that cannot be used is
said as kubectl says it (:func:`unusable_context`), and a token that can change (a token file, a credential plugin)
is read through :mod:`okt.kube.tokens` (:func:`token_source`).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import ssl
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

import pykube
import yaml

from okt import errors
from okt.kube import tokens


def token_source(config: pykube.KubeConfig, given: str | os.PathLike[str] | None) -> tokens.TokenSource | None:
    """Where the client's bearer token comes from when it can change: ``given`` (a token file), else the kubeconfig
    user's ``tokenFile`` (relative to the kubeconfig's folder, as kubectl reads it), else its credential plugin (its
    token, its client certificate, or both); None for a token that never changes (and for an auth provider: pykube's
    session handles it)."""
    user = config.user
    folder = config.kubeconfig_path.parent if config.kubeconfig_path is not None else None
    if given is not None or (user.get("tokenFile") and "exec" not in user and "auth-provider" not in user):
        where = pathlib.Path(given if given is not None else user["tokenFile"]).expanduser()
        return tokens.TokenFile(where if where.is_absolute() or folder is None else folder / where)
    if "exec" in user:
        return tokens.ExecToken(user["exec"], cluster=config.cluster, kubeconfig=config.kubeconfig_path)
    return None


def read_file(filename: str) -> pykube.KubeConfig:
    """pykube's ``KubeConfig.from_file``, refusing first a file that holds no kubeconfig at all.

    Why: pykube said ``argument of type 'NoneType' is not iterable`` of an empty file, and a YAML list or a string
    went on to be told to choose a context with --context.

    Raises:
        ValueError: the file is not YAML, is empty or is not a mapping (its message says which, never quoting it).
    """
    path = pathlib.Path(filename).expanduser()
    if not path.is_file():
        raise pykube.exceptions.PyKubeError(f"Configuration file {filename} not found")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        # PyYAML's report quotes the line it stopped at, over several lines: in a kubeconfig, a token or a key.
        raise ValueError(f"it is not valid YAML: {_yaml_problem(exc)}") from None
    if doc is None:
        raise ValueError("the file is empty: it holds no kubeconfig")
    if not isinstance(doc, dict):
        held = "a list" if isinstance(doc, list) else "a single value"  # not quoted: it may be a credential
        raise ValueError(f"it holds {held}, not a kubeconfig (a mapping of clusters, users and contexts)")
    config = pykube.KubeConfig(doc)
    config.filepath = path  # relative certificate paths are read from the kubeconfig's folder, as kubectl does
    return config


_SECTIONS = (
    ("clusters", "cluster", ("certificate-authority",)),
    ("users", "user", ("client-certificate", "client-key", "tokenFile")),
    ("contexts", "context", ()),
)
"""A kubeconfig's named entries: section, the key of each entry's body, the body's keys that are file paths."""


def listed_files(listed: str) -> list[str]:
    """The files ``$KUBECONFIG`` (``listed``) names, in order, each once: the entries between its
    :data:`os.pathsep`, those empty or of blanks only skipped (kubectl skips the empty ones, and finds no file of
    blanks to read)."""
    return list(dict.fromkeys(entry for entry in listed.split(os.pathsep) if entry.strip()))


def read_listed(listed: str) -> pykube.KubeConfig:
    """The files of ``$KUBECONFIG`` (``listed``, separated by :data:`os.pathsep`) merged as kubectl merges them.

    kubectl's rules: empty entries (blank ones too: :func:`listed_files`), repeated paths and files that do not exist
    are skipped; the first file to define a cluster, user or context of a name keeps it whole; ``current-context``
    comes from the first file that sets one; relative paths of a file (a CA, a client certificate or key, a token
    file, a credential plugin's command with a folder in it) are read from that file's folder.

    Raises:
        ValueError: a file is not a kubeconfig (its message names the file; an empty one too, as one file alone).
        pykube.exceptions.PyKubeError: none of the files exists, or ``listed`` names none.
    """
    paths = listed_files(listed)
    if not paths:
        raise pykube.exceptions.PyKubeError(f"it names no file ({listed!r})")
    if len(paths) == 1:
        return read_file(paths[0])  # one file: its relative paths are read from its folder as they are
    present = [path for path in paths if pathlib.Path(path).expanduser().is_file()]
    if not present:
        raise pykube.exceptions.PyKubeError("none of its files exists")
    docs = []
    for path in present:
        try:
            docs.append((pathlib.Path(path).expanduser(), read_file(path).doc))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc.__cause__
    config = pykube.KubeConfig(_merged_kubeconfig(docs))
    config.filepath = docs[0][0]  # every relative path is resolved already
    return config


def _merged_kubeconfig(docs: Iterable[tuple[pathlib.Path, Mapping[str, Any]]]) -> dict[str, Any]:
    """One kubeconfig document from ``docs`` (each file's path and document, in ``$KUBECONFIG``'s order), by
    kubectl's rules (see :func:`read_listed`); the documents are left as they are."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for path, doc in docs:
        folder = path.parent.absolute()
        for section, inner, files in _SECTIONS:
            taken = {entry.get("name") for entry in merged[section]}
            for entry in doc.get(section) or []:
                if isinstance(entry, dict) and entry.get("name") not in taken:
                    merged[section].append(_resolved(entry, inner, files, folder))
        if doc.get("current-context") and not merged.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for key, value in doc.items():
            merged.setdefault(key, value)  # apiVersion, kind, preferences: the first file's
    return merged


def _resolved(entry: Mapping[str, Any], inner: str, files: Iterable[str], folder: pathlib.Path) -> dict[str, Any]:
    """A copy of a cluster or user ``entry`` whose relative ``files`` are made absolute from ``folder``; a path
    starting with ``~`` is left to be expanded where it is read."""
    body = entry.get(inner)
    if not isinstance(body, dict):
        return dict(entry)
    body = dict(body)
    for key in files:
        value = body.get(key)
        if isinstance(value, str) and value and not value.startswith("~") and not os.path.isabs(value):
            body[key] = str(folder / value)
    plugin = body.get("exec")
    if isinstance(plugin, dict) and isinstance(plugin.get("command"), str):
        command = plugin["command"]
        if os.sep in command and not os.path.isabs(command):  # a command on PATH stays as it is
            body["exec"] = {**plugin, "command": str(folder / command)}
    return {**entry, inner: body}


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What PyYAML found wrong and where (1-based line and column), never the text it quotes."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return type(exc).__name__


def unusable_context(config: pykube.KubeConfig) -> str | None:
    """Why the kubeconfig's current context cannot be used, as kubectl would say it (None: it can).

    Why: pykube reads a context that names a user the file does not define as no user at all — every request would
    go out anonymously — and says only ``'name'`` (a KeyError) for a context or cluster that is not there.
    """
    if not config.doc.get("contexts"):
        return "it defines no context: add one (kubectl config set-context)"
    try:
        name = config.current_context
    except pykube.exceptions.PyKubeError:
        return "it sets no current-context: choose one with --context"
    context = config.contexts.get(name)
    if context is None:
        return f"it has no context {name!r}"
    for part, defined in (("cluster", config.clusters), ("user", config.users)):
        if context.get(part) and context[part] not in defined:
            return f"context {name!r} names the {part} {context[part]!r}, which it does not define"
    return None


# -- what the kubeconfig says beyond where the token comes from ----------------------------------------------------

PROXY_SCHEMES = ("http", "https", "socks5")
"""The schemes of a cluster's ``proxy-url`` that kubectl accepts."""

_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
"""The characters of an HTTP header name (RFC 7230's ``tchar``) a key of ``as-user-extra`` keeps as it is."""


def proxy_url(config: pykube.KubeConfig) -> str | None:
    """The cluster's ``proxy-url`` as ``requests`` takes it, or None when it sets none.

    kubectl sends every request to the cluster through it, in place of ``HTTPS_PROXY`` and ``NO_PROXY``. A
    ``socks5://`` one is given as ``socks5h://``: as Go's SOCKS dialer, the proxy resolves the API server's name.

    Raises:
        okt.errors.ConfigurationError: it is not an http, https or socks5 URL with a host (kubectl refuses it too), or
            it is a socks5 one and PySocks, which ``requests`` speaks SOCKS with, is not installed. The URL is never
            quoted: it may carry the proxy's password.
    """
    given = config.cluster.get("proxy-url")
    if given is None or given == "":
        return None
    value = given if isinstance(given, str) else ""
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in PROXY_SCHEMES or not parts.hostname:
        scheme = f"{parts.scheme}://" if parts.scheme else "no scheme"
        raise errors.ConfigurationError(
            f"the kubeconfig's proxy-url must be an http://, https:// or socks5:// URL with a host, got {scheme}"
        )
    if parts.scheme == "socks5":
        if not _installed("socks"):
            raise errors.ConfigurationError(
                "the kubeconfig's proxy-url is a socks5:// proxy, which needs PySocks: pip install PySocks"
            )
        return "socks5h" + value[len("socks5") :]
    return value


def impersonation(config: pykube.KubeConfig) -> tuple[tuple[str, str], ...]:
    """The headers that ask the API server to act as the kubeconfig user's ``as``, ``as-uid``, ``as-groups`` and
    ``as-user-extra`` (kubectl's ``--as`` flags), in the order kubectl sends them: ``Impersonate-User``,
    ``Impersonate-Uid``, one ``Impersonate-Group`` per group, one ``Impersonate-Extra-<key>`` per value (the key
    percent-encoded where a header name cannot hold a character, as client-go writes it and the API server reads it).
    Sent with every request, the API server authorizes each one as that user: none is sent as the kubeconfig's own.

    Raises:
        okt.errors.ConfigurationError: a uid, groups or extras without ``as`` (kubectl refuses them too: the API server
            impersonates a user, not groups alone), a value of the wrong type, or one no header can carry.
    """
    user = config.user
    name, uid = user.get("as"), user.get("as-uid")
    groups, extra = user.get("as-groups"), user.get("as-user-extra")
    if not name and (uid or groups or extra):
        raise errors.ConfigurationError(
            "the kubeconfig's user asks for as-uid, as-groups or as-user-extra without as (the user to impersonate); "
            "kubectl refuses that too"
        )
    if not name:
        return ()
    if groups is not None and (not isinstance(groups, list) or not all(isinstance(g, str) for g in groups)):
        raise errors.ConfigurationError("the kubeconfig's as-groups must be a list of group names")
    if extra is not None and (
        not isinstance(extra, dict)
        or not all(
            isinstance(key, str) and isinstance(values, list) and all(isinstance(v, str) for v in values)
            for key, values in extra.items()
        )
    ):
        raise errors.ConfigurationError("the kubeconfig's as-user-extra must map names to lists of values")
    headers: list[tuple[str, str]] = [("Impersonate-User", _header_value("as", name))]
    if uid:
        headers.append(("Impersonate-Uid", _header_value("as-uid", uid)))
    headers += [("Impersonate-Group", _header_value("as-groups", group)) for group in groups or ()]
    for key, values in (extra or {}).items():
        escaped = "".join(c if c in _TOKEN_CHARS and c != "%" else _percent(c) for c in key)
        headers += [(f"Impersonate-Extra-{escaped}", _header_value("as-user-extra", value)) for value in values]
    return tuple(headers)


def _percent(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode())


def _header_value(field: str, value: object) -> str:
    """``value`` of the kubeconfig's ``field`` as a header carries it; a ConfigurationError for one it cannot carry."""
    if not isinstance(value, str):
        raise errors.ConfigurationError(f"the kubeconfig's {field} must be text, got {type(value).__name__}")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise errors.ConfigurationError(f"the kubeconfig's {field} holds characters a header cannot carry") from None
    if value != value.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise errors.ConfigurationError(f"the kubeconfig's {field} holds control characters or surrounding spaces")
    return value


def refuse_unhonoured(config: pykube.KubeConfig) -> None:
    """Refuse what the kubeconfig's cluster and user say that okt would not do as kubectl does — connect elsewhere,
    less securely, or as someone else — rather than do something else without a word. What only the interactive
    ``kubectl`` reads (``preferences``, ``extensions``) is left unread; the Running guide lists each field.

    Raises:
        okt.errors.ConfigurationError: one line naming the field: a certificate or key given both as a file and
            inline, a client certificate without its key, a token beside a username and password, a credential plugin
            beside an auth provider (kubectl refuses each of those), an auth provider okt cannot run (only ``oidc``
            and, with ``google-auth`` installed, ``gcp``: another would send every request anonymously).
    """
    cluster, user = _entry(config, "clusters", "cluster"), _entry(config, "users", "user")
    for body, field in ((cluster, "certificate-authority"), (user, "client-certificate"), (user, "client-key")):
        if body.get(field) and body.get(f"{field}-data"):
            raise errors.ConfigurationError(
                f"the kubeconfig sets both {field} and {field}-data; give one (kubectl refuses both too)"
            )
    certificate = user.get("client-certificate") or user.get("client-certificate-data")
    if certificate and not (user.get("client-key") or user.get("client-key-data")):
        raise errors.ConfigurationError(
            "the kubeconfig's user has a client-certificate but no client-key (or client-key-data) to prove it with"
        )
    if user.get("token") and (user.get("username") or user.get("password")):
        raise errors.ConfigurationError(
            "the kubeconfig's user sets both a token and a username/password; keep one (kubectl refuses both too)"
        )
    provider = user.get("auth-provider")
    if provider is not None and "exec" in user:
        raise errors.ConfigurationError(
            "the kubeconfig's user sets both exec and auth-provider; keep one (kubectl refuses both too)"
        )
    if provider is not None:
        name = provider.get("name") if isinstance(provider, dict) else None
        if name not in ("oidc", "gcp"):
            raise errors.ConfigurationError(
                f"the kubeconfig's auth-provider {name!r} is not one okt can run (oidc, gcp): use a credential "
                "plugin (user.exec) instead, as kubectl now asks"
            )
        if name == "gcp" and not _installed("google.auth"):
            raise errors.ConfigurationError(
                "the kubeconfig's auth-provider gcp needs google-auth (pip install new-pykube[gcp]); kubectl replaced "
                "it with the gke-gcloud-auth-plugin credential plugin (user.exec)"
            )


def refuse_unloadable_certificates(config: pykube.KubeConfig) -> None:
    """Load the CA and the client certificate the connections to the API server will use, and refuse one that cannot
    be loaded with one line naming it (the file, or the kubeconfig's ``-data`` field) and why.

    Why at start: each is read only when the first connection is made. On the direct path the failure was a
    connection failure (``no response (Unavailable)``, retried as if the server were restarting); through an
    ``https://`` proxy, where the proxy's context is made first, a bare :class:`OSError` out of the first request.
    Read here, the same file fails the same way at start, whichever path, proxy or none, the requests take.
    ``config``'s inline data must have been written to files already (as :class:`okt.kube.client.Client` does).

    Raises:
        okt.errors.ConfigurationError: the CA (``PYKUBE_SSL_CERTIFICATE_AUTHORITY``'s file first, as pykube reads
            it, else the cluster's ``certificate-authority``) cannot be read or holds no PEM certificate, or the
            user's ``client-certificate`` and ``client-key`` cannot be read or do not make a pair.
    """
    cluster, user = _entry(config, "clusters", "cluster"), _entry(config, "users", "user")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    named = os.environ.get("PYKUBE_SSL_CERTIFICATE_AUTHORITY")
    if named:
        authority: str | None = named
        said = f"PYKUBE_SSL_CERTIFICATE_AUTHORITY's CA file {named}"
    elif "certificate-authority" in config.cluster:
        authority = config.cluster["certificate-authority"].filename()
        inline = cluster.get("certificate-authority-data")
        said = "the kubeconfig's certificate-authority-data" if inline else f"the CA file {authority}"
    else:
        authority = None
    if authority is not None and not os.path.isdir(authority):  # a folder of CAs (as requests takes) is read lazily
        try:
            context.load_verify_locations(cafile=authority)
        except OSError as exc:
            raise errors.ConfigurationError(f"{said} cannot be used: {_unloadable(exc, 'CA certificate')}") from exc
    if "client-certificate" in config.user and "client-key" in config.user:
        files = (config.user["client-certificate"].filename(), config.user["client-key"].filename())
        inline = user.get("client-certificate-data") or user.get("client-key-data")
        said = "the kubeconfig's client-certificate and client-key" + ("" if inline else f" ({files[0]}, {files[1]})")
        try:
            # An empty password: OpenSSL would ask for an encrypted key's on the terminal (kubectl reads none either)
            context.load_cert_chain(*files, password="")
        except OSError as exc:
            raise errors.ConfigurationError(
                f"{said} cannot be used: {_unloadable(exc, 'certificate and key')}"
            ) from exc


def _unloadable(exc: OSError, what: str) -> str:
    """Why a certificate file could not be loaded, in one line that never quotes it (a key may be in it)."""
    if isinstance(exc, ssl.SSLError):  # OpenSSL read it and found no PEM block, or a broken one, or a key of another
        return f"it holds no usable {what} in PEM form ({exc.reason or exc})"
    return exc.strerror or str(exc)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is not there
        return False


def _entry(config: pykube.KubeConfig, section: str, inner: str) -> Mapping[str, Any]:
    """The current context's cluster or user as the kubeconfig's document has it (pykube's parsed one has folded
    ``<field>-data`` into ``<field>``, so it cannot say that both were given)."""
    context = config.contexts.get(config.current_context) or {}
    name = context.get(inner)
    for entry in config.doc.get(section) or ():
        if isinstance(entry, dict) and entry.get("name") == name and isinstance(entry.get(inner), dict):
            body: Mapping[str, Any] = entry[inner]
            return body
    return {}
