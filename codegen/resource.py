"""``okt gen resource``: a resource wrapper for one child kind, generated from a YAML manifest.

Why it exists: a child of a custom resource is best described by the YAML an author already has, and a wrapper around
it is mostly boilerplate (API version, kind, template, which fields to hash). OKT generated that boilerplate in Go;
okt generates it in Python, split the same way so that regeneration and hand-written code never collide:

* ``<type>_<crkind>_gen.py`` — **generated, always rewritten**: the manifest as ``TEMPLATE`` (name and namespace
  replaced by ``{{ name }}``/``{{ namespace }}``), ``HASHED_FIELDS`` from the kind dictionary, and
  ``class <Type><CrKind>Base(okt.<Base>)`` with ``api_version``, ``kind``, ``template`` and ``hashable_ref``;
* ``<type>_<crkind>.py`` — **the author's, written only when missing**: ``class <Type><CrKind>(<...>Base)`` with a
  documented ``mutate_with_cr`` whose default changes nothing.

A custom resource may own several children of one kind (a ConfigMap of settings and one of scripts), each from its own
manifest. The first manifest generated takes the names above; a generated module records in its header the manifest
it came from, so another manifest of the same kind never replaces it: it gets modules and classes of its own, named
after its file (``scripts.yaml``: ``<type>_<crkind>_scripts_gen.py``, ``class <Type><CrKind>Scripts``). Regenerating
from a manifest rewrites the module that manifest made, whichever its name.

The author's module imports the generated one relatively, so the output directory is a package: an ``__init__.py`` is
created there when missing (and never touched afterwards).

Guarantees: the generated code passes ruff and mypy strict; generation is deterministic (the same inputs give the same
bytes, the header records the command that regenerates it); an existing author's module is reported as kept and never
opened for writing; a generated module is only ever rewritten from the manifest it was generated from (the paths of
its recorded command are read relative to each other, so regenerating from another directory finds it); every input
error is one :class:`~okt.codegen.errors.CodegenError` line raised before anything is written.
"""

from __future__ import annotations

import enum
import functools
import json
import keyword
import os
import re
import shlex
import tempfile
import textwrap
import tomllib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from okt.codegen import child_schema, crd, dictionary, errors, manifest

TEMPLATES_DIR = Path(__file__).with_name("templates")
"""Where the Jinja2 templates of the generated modules live."""

DEFAULT_LINE_LENGTH = 88
"""ruff's default line length, used when no ruff configuration governs the output directory."""

DEFAULT_EXAMPLE = 'self.desired["metadata"].setdefault("labels", {})["app"] = cr.name'
"""The line shown, commented out, in the author's ``mutate_with_cr`` for a kind the dictionary gives no example of
(the rendered template always has its metadata: name and namespace): within the 78 characters the dictionary allows
an example, so that it keeps to 88 columns where it stands."""

_CR_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*\Z")
_VERSION = re.compile(r"^v[0-9]+((alpha|beta)[0-9]+)?\Z")
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_FILE_NAME_WORD = re.compile(r"[A-Za-z0-9]+")
_TRAILING_SPACES = re.compile(r" +$", re.MULTILINE)
_COMMAND_LINE = "#   "  # a line of the header's command: the other header lines start with "# " and a word
_PACKAGE_DOCSTRING = '"""Wrappers from ``okt gen resource`` and their authors\' subclasses."""\n'


class Action(enum.Enum):
    """What generation did to one file."""

    WRITTEN = "written"
    """Generated module: (re)written."""
    CREATED = "created"
    """A file that did not exist: the author's module or the package's ``__init__.py``."""
    KEPT = "kept"
    """The author's module already existed: left exactly as it was."""


@dataclass(frozen=True)
class FileResult:
    """One file of a generation and what happened to it."""

    path: Path
    action: Action


@dataclass(frozen=True)
class Modules:
    """The two modules of a wrapper: names (without ``.py``) and source text."""

    gen_name: str
    gen_source: str
    user_name: str
    user_source: str


def snake_case(name: str) -> str:
    """``HorizontalPodAutoscaler`` -> ``horizontal_pod_autoscaler``; acronyms stay whole."""
    return _WORD_BOUNDARY.sub("_", name).lower()


def module_names(resource_type: str, cr_kind: str, suffix: str = "") -> tuple[str, str]:
    """The generated and the author's module names for a child kind and a custom resource kind.

    ``suffix`` (see :func:`manifest_suffix`) tells apart a further manifest of the same kind.
    """
    stem = f"{snake_case(resource_type)}_{snake_case(cr_kind)}"
    stem = f"{stem}_{suffix}" if suffix else stem
    return f"{stem}_gen", stem


def manifest_suffix(manifest_path: Path) -> str:
    """The words of the manifest's file name, snake_cased: ``configMap-scripts.yaml`` -> ``config_map_scripts``.

    Empty when the file name holds no ASCII letter or digit.
    """
    return "_".join(snake_case(word) for word in _FILE_NAME_WORD.findall(manifest_path.stem))


def regenerate_command(
    *,
    resource_type: str,
    cr_kind: str,
    group: str,
    version: str,
    manifest_path: Path | str,
    out_dir: Path | str,
    dictionary_files: Sequence[Path | str] = (),
    crd_path: Path | str | None = None,
) -> list[str]:
    """The ``okt gen resource`` command line that produces this wrapper, paths as the author gave them."""
    command = ["okt", "gen", "resource", "--type", resource_type, "--kind", cr_kind, "--group", group]
    command += ["--version", version, "--out", Path(out_dir).as_posix()]
    for path in dictionary_files:
        command += ["--dictionary", Path(path).as_posix()]
    if crd_path is not None:
        command += ["--crd", Path(crd_path).as_posix()]
    return [*command, Path(manifest_path).as_posix()]


def render(
    *,
    spec: dictionary.KindSpec,
    cr_kind: str,
    group: str,
    version: str,
    template: str,
    command: Sequence[str],
    line_length: int = DEFAULT_LINE_LENGTH,
    suffix: str = "",
    openapi_assignment: str | None = None,
) -> Modules:
    """Render both modules of the wrapper (pure: no file is read or written).

    Args:
        spec: the dictionary entry of the child kind.
        cr_kind, group, version: the custom resource that owns the child (documentation and names only).
        template: the child's Jinja2 YAML template (see :func:`okt.codegen.manifest.to_template`).
        command: the command line recorded in the generated module's header.
        line_length: the line length ruff enforces on the output: the header is wrapped to it, the author's
            module imports the base class in parentheses when one line would be longer (as ruff's import sorting
            wants it), a ``class`` line that would be longer puts its base on a line of its own (as ruff format
            writes it), so does each hashed field of a ``HASHED_FIELDS`` line that would be longer, a docstring
            line that names make longer is refilled (see :func:`_fitted`), and a template line longer than it gets
            the template a ``# noqa`` (see :func:`_template_noqa`).
        suffix: what tells this wrapper's modules and classes apart from the first of its kind (see
            :func:`manifest_suffix`); empty for the first.
        openapi_assignment: ``OPENAPI_SCHEMA`` and its value (:func:`okt.codegen.child_schema.assignment`), which
            the class takes for its ``openapi_schema``; None for none.
    """
    gen_name, user_name = module_names(spec.kind, cr_kind, suffix)
    user_class = spec.kind + cr_kind + "".join(word.capitalize() for word in suffix.split("_"))
    base_class = f"{user_class}Base"
    literal = _triple_quoted_body(template)
    owner = f"{spec.kind} owned by {cr_kind} ({group}/{version})"
    regeneration = (
        "Generated once by ``okt gen resource``, then yours. Regeneration rewrites\n"
        f"``{gen_name}.py`` only (template, API version,\n"
        "hashed fields) and never touches this file."
    )
    example = spec.example or DEFAULT_EXAMPLE
    context = {
        "gen_summary": _fitted(f'"""{owner}: the generated part.', line_length),
        "user_summary": _fitted(f'"""{owner}: the author\'s part.', line_length),
        "user_regeneration": _fitted(regeneration, line_length),
        "user_class_docstring": _fitted(
            f'"""The {spec.kind} that okt keeps in place for each {cr_kind}."""', line_length, indent="    "
        ),
        "base_class_docstring": _fitted(
            f'"""{spec.kind} ({spec.api_version}) rendered from ``TEMPLATE``.' + ('"""' if spec.mutable else ""),
            line_length,
            indent="    ",
        ),
        "spec": spec,
        "cr_kind": cr_kind,
        "group": group,
        "version": version,
        "header": _header(command, user_name, line_length),
        "template_literal": literal,
        "template_noqa": _template_noqa(literal, line_length),
        "base_import_wrapped": len(f"from .{gen_name} import {base_class}") > line_length,
        "base_class_wrapped": len(f"class {base_class}(okt.{spec.base}):") > line_length,
        "user_class_wrapped": len(f"class {user_class}({base_class}):") > line_length,
        "hashed_assignment": _hashed_assignment(spec.hashed, line_length),
        "openapi_assignment": openapi_assignment,
        "base_class": base_class,
        "user_class": user_class,
        "gen_module": gen_name,
        "user_module": user_name,
        "example": example,
        # A dictionary's example keeps to 88 columns where it stands (its entries are checked so); a shorter line
        # length would break it mid-statement, so it is kept whole.
        "example_noqa": _width(f"        # {example}") > line_length,
    }
    environment = _environment()
    return Modules(
        gen_name=gen_name,
        gen_source=environment.get_template("resource_gen.py.jinja").render(context),
        user_name=user_name,
        user_source=environment.get_template("resource_user.py.jinja").render(context),
    )


def generate(
    *,
    resource_type: str,
    cr_kind: str,
    group: str,
    version: str,
    manifest_path: Path,
    out_dir: Path,
    dictionary_files: Sequence[Path] = (),
    crd_path: Path | None = None,
) -> list[FileResult]:
    """Generate the wrapper of ``resource_type`` owned by ``cr_kind`` from the manifest at ``manifest_path``.

    ``crd_path``: for a child of a custom kind, the YAML file of its CustomResourceDefinition, whose map lists the
    wrapper carries (``OPENAPI_SCHEMA``, see :mod:`okt.codegen.child_schema`).

    Writes ``<out_dir>/<type>_<crkind>_gen.py`` (always), ``<out_dir>/<type>_<crkind>.py`` (only when missing) and
    ``<out_dir>/__init__.py`` (only when missing). When ``<type>_<crkind>_gen.py`` was generated from another
    manifest, the two modules are ``<type>_<crkind>_<file>`` instead, ``<file>`` from the manifest's file name (see
    :func:`manifest_suffix`). Paths are recorded in the header as given, so pass them relative to where the author
    will run the regeneration.

    Returns:
        One :class:`FileResult` per file considered, in the order above (``__init__.py`` only when created).

    Raises:
        CodegenError: unknown kind, invalid ``cr_kind``/``group``/``version``, a dictionary file or the manifest is
            unreadable or invalid, the manifest's kind or apiVersion differ from the dictionary's, both module names
            are taken by wrappers of other manifests, the CRD is unreadable or holds no schema of the child's kind,
            or a file cannot be written.
    """
    _check_names(cr_kind, group, version)
    _check_package(out_dir)
    kinds = dictionary.load(dictionary_files)
    spec = kinds.lookup(resource_type)
    child = manifest.read(manifest_path, spec)
    schema = None if crd_path is None else child_schema.read(crd_path, spec)
    command = regenerate_command(
        resource_type=spec.kind,
        cr_kind=cr_kind,
        group=group,
        version=version,
        manifest_path=manifest_path,
        out_dir=out_dir,
        dictionary_files=dictionary_files,
        crd_path=crd_path,
    )
    line_length = ruff_line_length(out_dir)
    modules = render(
        spec=spec,
        cr_kind=cr_kind,
        group=group,
        version=version,
        template=manifest.to_template(child, spec),
        command=command,
        line_length=line_length,
        suffix=_suffix(spec.kind, cr_kind, manifest_path, out_dir),
        openapi_assignment=None if schema is None else child_schema.assignment(schema, line_length),
    )
    return _write(modules, out_dir)


def ruff_line_length(directory: Path) -> int:
    """The ``line-length`` of the ruff configuration that governs ``directory`` (ruff's default when none does).

    Like ruff, the closest ``.ruff.toml``, ``ruff.toml`` or ``pyproject.toml`` with a ``[tool.ruff]`` table wins;
    ``directory`` need not exist yet. An unreadable or invalid configuration counts as absent. A configuration without
    a ``line-length`` takes its ``extend``'s (a path relative to it, ``~`` and variables expanded, as ruff reads it),
    and so on up that chain; a chain that comes back to a file it passed ends there.
    """
    for folder in [directory.absolute(), *directory.absolute().parents]:
        for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
            path = folder / name
            config = _ruff_config(path) if path.is_file() else None
            if config is not None:
                return _line_length(config, path, set())
    return DEFAULT_LINE_LENGTH


def _ruff_config(path: Path) -> dict[str, Any] | None:
    """The ruff settings of ``path`` (a ``pyproject.toml``'s ``[tool.ruff]``); None when none or unreadable."""
    try:
        config: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if path.name == "pyproject.toml":
        config = config.get("tool", {}).get("ruff")
    return config if isinstance(config, dict) else None


def _line_length(config: dict[str, Any], path: Path, seen: set[Path]) -> int:
    """The line length ``config`` (read from ``path``) sets, or the one of the configuration it extends."""
    if "line-length" in config:
        length = config["line-length"]
        return length if isinstance(length, int) and length > 0 else DEFAULT_LINE_LENGTH
    extend = config.get("extend")
    if not isinstance(extend, str) or not extend:
        return DEFAULT_LINE_LENGTH
    base = path.parent / os.path.expandvars(os.path.expanduser(extend))
    seen.add(path.resolve())
    if base.resolve() in seen or not base.is_file():
        return DEFAULT_LINE_LENGTH
    parent = _ruff_config(base)
    return DEFAULT_LINE_LENGTH if parent is None else _line_length(parent, base, seen)


def _suffix(resource_type: str, cr_kind: str, manifest_path: Path, out_dir: Path) -> str:
    """The :func:`manifest_suffix` of the wrapper of ``manifest_path``, or ``""`` when it is the first of its kind.

    The wrapper is the one a generated module records this manifest for; else the suffixed one when only the author's
    module of that name is left (its generated module was deleted: the first name may belong to another manifest);
    else the first name when no other manifest holds it. Taking the first name only when it is free keeps the names of
    existing projects, and ``<type>_<crkind>_gen.py`` is never silently rewritten from another child's manifest.
    """
    source = manifest_path.resolve()
    suffix = manifest_suffix(manifest_path)
    first_gen, _ = module_names(resource_type, cr_kind)
    own_gen, own_user = module_names(resource_type, cr_kind, suffix)
    own_source = _recorded_manifest(out_dir / f"{own_gen}.py", out_dir) if suffix else None
    if suffix and (own_source == source or (own_source is None and (out_dir / f"{own_user}.py").exists())):
        return suffix
    first_source = _recorded_manifest(out_dir / f"{first_gen}.py", out_dir)
    if first_source is None or first_source == source:
        return ""
    if not suffix or own_source is not None:
        held = f"{os.path.relpath(first_source)} holds {out_dir / first_gen}.py"
        if own_source is None:
            held += " and the manifest's file name, without a letter or digit, names no other"
        else:
            held += f" and {os.path.relpath(own_source)} holds {out_dir / own_gen}.py"
        raise errors.CodegenError(
            f"manifest {manifest_path}: its wrapper's names are taken by other {resource_type}s of {cr_kind} ({held}): "
            f"rename {manifest_path} (a further wrapper is named after its file) or generate it with another --out"
        )
    return suffix


def _recorded_manifest(gen_path: Path, out_dir: Path) -> Path | None:
    """Where the manifest of the generated module ``gen_path`` is, from the command its header records.

    The header's paths are relative to where that command ran; the recorded ``--out`` is where ``out_dir`` was from
    there, so the manifest is found from ``out_dir`` wherever generation runs now. None when there is no such file or
    no command of ``okt gen resource`` in it.
    """
    try:
        lines = gen_path.read_text(encoding="utf-8").split("\n")
        start = lines.index("# Regenerate with:") + 1
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    command = []
    for line in lines[start:]:
        if not line.startswith(_COMMAND_LINE):
            break
        command.append(line[1:].removesuffix("\\"))
    try:
        words = shlex.split(" ".join(command))
        recorded_out = Path(words[words.index("--out") + 1])
    except (ValueError, IndexError):
        return None
    if words[:3] != ["okt", "gen", "resource"]:
        return None
    recorded_manifest = Path(words[-1])
    if recorded_manifest.is_absolute() or recorded_out.is_absolute():
        return recorded_manifest.resolve()
    return (out_dir / os.path.relpath(recorded_manifest, recorded_out)).resolve()


def _check_names(cr_kind: str, group: str, version: str) -> None:
    if not _CR_KIND.match(cr_kind):
        raise errors.CodegenError(f"invalid --kind {cr_kind!r}: expected a CamelCase kind such as Memcached")
    if not crd.DNS_SUBDOMAIN.match(group):
        raise errors.CodegenError(f"invalid --group {group!r}: expected a lowercase DNS name such as cache")
    if not _VERSION.match(version):
        raise errors.CodegenError(f"invalid --version {version!r}: expected a Kubernetes version such as v1alpha1")


def _check_package(out_dir: Path) -> None:
    """Refuse an ``out_dir`` Python cannot import as a package: the author's module imports the generated one
    relatively (``from .deployment_memcached_gen import ...``), so a folder named ``my-res``, ``2nd`` or ``class`` would
    hold modules that never import."""
    folder = out_dir.resolve().name
    if not folder.isidentifier() or keyword.iskeyword(folder):
        raise errors.CodegenError(
            f"invalid --out {out_dir.as_posix()!r}: {folder!r} is not a name Python imports a package by (letters, "
            "digits and underscores, not starting with a digit, not a keyword), and the wrappers import each other "
            "from their package"
        )


def _write(modules: Modules, out_dir: Path) -> list[FileResult]:
    results: list[FileResult] = []
    gen_path = out_dir / f"{modules.gen_name}.py"
    user_path = out_dir / f"{modules.user_name}.py"
    init_path = out_dir / "__init__.py"
    # Checked before anything is written: a folder where the author's module goes was reported "kept" (it exists)
    # and the wrappers, written beside it, never imported; one where the generated module goes failed after the
    # others were written.
    for path in (gen_path, user_path, init_path):
        if path.exists() and not path.is_file():
            raise errors.CodegenError(
                f"cannot write {path}: a folder (or another non-file) is in the way of the module"
            )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        replace_whole(gen_path, modules.gen_source)
        results.append(FileResult(gen_path, Action.WRITTEN))
        created = _create(user_path, modules.user_source)
        results.append(FileResult(user_path, Action.CREATED if created else Action.KEPT))
        if _create(init_path, _PACKAGE_DOCSTRING):
            results.append(FileResult(init_path, Action.CREATED))
    except OSError as exc:
        where = exc.filename if exc.filename else out_dir
        raise errors.CodegenError(f"cannot write {where}: {exc.strerror or exc}") from exc
    return results


def replace_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: readers see the old file or the new one, never half of one, and a write
    that fails (a full disk) leaves the old one as it was.

    Raises:
        OSError: the file cannot be written (its folder is missing or read-only, the disk is full).
    """
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _create(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` only if no such file exists; return whether it was written."""
    try:
        with path.open("x", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except FileExistsError:
        return False
    return True


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # noqa: S701 -- the output is Python source, HTML escaping would corrupt it
    )
    environment.filters["py_str"] = _string_literal
    return environment


def _string_literal(value: str) -> str:
    """A double-quoted Python string literal (the quote style ruff format keeps)."""
    return json.dumps(value, ensure_ascii=False)


def _tuple_literal(values: Sequence[str]) -> str:
    if len(values) == 1:
        return f"({_string_literal(values[0])},)"
    return "(" + ", ".join(_string_literal(value) for value in values) + ")"


def _hashed_assignment(values: Sequence[str], line_length: int) -> str:
    """``HASHED_FIELDS`` and its tuple, as ruff format writes them: on one line when it fits in ``line_length``
    columns, else one field a line with a trailing comma (a kind of a dictionary file may hash many fields)."""
    target = "HASHED_FIELDS: tuple[str, ...] = "
    line = target + _tuple_literal(values)
    if _width(line) <= line_length:
        return line
    return target + "(\n" + "".join(f"    {_string_literal(value)},\n" for value in values) + ")"


def _triple_quoted_body(text: str) -> str:
    """``text`` escaped to sit verbatim between triple double quotes.

    A tab (a Makefile or a tab-separated file in a ConfigMap) is written ``\\t``, a zero-width space ``\\u200b``
    and a space that ends a line (a block scalar's, which the manifest keeps) ``\\x20``: ruff refuses them unescaped
    in source (E101/W191, PLE2515, W291), and the escapes read back as the characters themselves.
    """
    escaped = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\u200b", "\\u200b")
    escaped = _TRAILING_SPACES.sub(lambda match: "\\x20" * len(match.group(0)), escaped)
    if '"""' in escaped:
        escaped = escaped.replace('"', '\\"')
    return escaped


def _template_noqa(literal: str, line_length: int) -> list[str]:
    """The ruff rules the manifest, embedded verbatim, may break in ``TEMPLATE``: the codes of its ``# noqa``.

    A line longer than ``line_length`` breaks E501; a non-ASCII character may be one ruff calls ambiguous (RUF001:
    an en dash, a typographic apostrophe). ``RUF100`` keeps the directive from being reported as unused where a rule
    is not enabled (ruff's default rules leave E501 out) or a character is not ambiguous.
    """
    codes = []
    if any(_width(line) > line_length for line in literal.split("\n")):
        codes.append("E501")
    if not literal.isascii():
        codes.append("RUF001")
    return [*codes, "RUF100"] if codes else []


def _width(line: str) -> int:
    """The columns ``line`` takes, as ruff counts them for E501: a wide East Asian character takes two."""
    return sum(2 if unicodedata.east_asian_width(character) in ("W", "F") else 1 for character in line)


def _fitted(text: str, line_length: int, indent: str = "") -> str:
    """``text``, lines of a docstring at ``indent`` (the first one without it), as written when every line fits in
    ``line_length`` columns; else refilled to fit, a word longer than a line kept whole.

    The names in a docstring (the kinds, the group, the generated module) may be of any length: written as is, a long
    one made a line longer than the line length (E501). Text that fits keeps its lines, chosen to read well.
    """
    if all(len(indent) + _width(line) <= line_length for line in text.splitlines()):
        return text
    filled = textwrap.fill(
        " ".join(text.split()),
        width=line_length,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return filled[len(indent) :]


def _header(command: Sequence[str], user_module: str, line_length: int) -> list[str]:
    lines = ["Code generated by okt gen resource. DO NOT EDIT.", "Regenerate with:"]
    lines += _wrap_command(_shell_chunks(command), indent="  ", width=line_length - 2)
    lines += ["Your code goes in this module, which regeneration never touches:", f"  {user_module}.py"]
    return lines


def _shell_chunks(command: Sequence[str]) -> list[str]:
    """Shell-quoted words, each option glued to its value so that wrapping never separates them."""
    chunks: list[str] = []
    for word in command:
        quoted = shlex.quote(word)
        if chunks and chunks[-1].startswith("--") and " " not in chunks[-1]:
            chunks[-1] = f"{chunks[-1]} {quoted}"
        else:
            chunks.append(quoted)
    return chunks


def _wrap_command(words: Sequence[str], *, indent: str, width: int) -> list[str]:
    """Shell words on lines of at most ``width`` columns (when words allow), continued with a backslash."""
    lines: list[str] = []
    current = ""
    for word in words:
        if current and len(indent) + len(current) + len(word) + 3 > width:
            lines.append(f"{indent}{current} \\")
            current = f"  {word}"
        else:
            current = f"{current} {word}" if current else word
    lines.append(f"{indent}{current}")
    return lines
