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

import os
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

import pykube
import yaml

from okt.kube import tokens


def token_source(config: pykube.KubeConfig, given: str | os.PathLike[str] | None) -> tokens.TokenSource | None:
    """Where the client's bearer token comes from when it can change: ``given`` (a token file), else the kubeconfig
    user's ``tokenFile`` (relative to the kubeconfig's folder, as kubectl reads it), else its credential plugin when
    that gives a token; None for a token that never changes (and for an auth provider, or a plugin that gives a client
    certificate: pykube's session handles those)."""
    user = config.user
    folder = config.kubeconfig_path.parent if config.kubeconfig_path is not None else None
    if given is not None or (user.get("tokenFile") and "exec" not in user and "auth-provider" not in user):
        where = pathlib.Path(given if given is not None else user["tokenFile"]).expanduser()
        return tokens.TokenFile(where if where.is_absolute() or folder is None else folder / where)
    if "exec" in user:
        try:
            return tokens.ExecToken(user["exec"], cluster=config.cluster, kubeconfig=config.kubeconfig_path)
        except tokens.CertificateCredential:
            return None
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


def read_listed(listed: str) -> pykube.KubeConfig:
    """The files of ``$KUBECONFIG`` (``listed``, separated by :data:`os.pathsep`) merged as kubectl merges them.

    kubectl's rules: empty entries, repeated paths and files that do not exist are skipped; the first file to define
    a cluster, user or context of a name keeps it whole; ``current-context`` comes from the first file that sets one;
    relative paths of a file (a CA, a client certificate or key, a token file, a credential plugin's command with a
    folder in it) are read from that file's folder.

    Raises:
        ValueError: a file is not a kubeconfig (its message names the file; an empty one too, as one file alone).
        pykube.exceptions.PyKubeError: none of the files exists.
    """
    paths = list(dict.fromkeys(entry for entry in listed.split(os.pathsep) if entry))
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
