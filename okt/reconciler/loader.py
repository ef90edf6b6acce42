"""Find the reconcilers of an operator: a Python file (``okt run main.py``) or a module (``okt run -m pkg.op``).

Errors are :class:`okt.errors.ConfigurationError` with one readable line: a missing file, a module that fails to
import (its exception, not a traceback) or exits while importing, a module without a Reconciler subclass, a timer or
a daemon declared at its top level (never called there).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pathlib
import sys
import traceback
import types
from collections.abc import Callable

from okt import errors
from okt.kube import kinds
from okt.reconciler import daemons, reconciler, timers

_EXITED = "start anything it runs as a script under if __name__ == '__main__':"


def _exited(what: object, exc: SystemExit) -> errors.ConfigurationError:
    """A module's ``sys.exit()`` at import time, as one line: left alone, it ended the process with its own status
    (0 for a bare ``sys.exit()``) and not a word, the operator never run."""
    return errors.ConfigurationError(f"{what} exited (SystemExit {exc.code}) while importing: {_EXITED}")


def _failed(what: object, exc: Exception) -> errors.ConfigurationError:
    """An exception raised while importing, as one line that says where: the line that raised it, and the operator's
    own line that led there when that is another (the author's traceback, without the import machinery's frames)."""
    return errors.ConfigurationError(f"{what} failed to import: {type(exc).__name__}: {exc}{_where(exc)}")


def _where(exc: BaseException) -> str:
    """`` (at FILE:LINE in FUNCTION, from FILE:LINE)``: the innermost frame and the outermost one of the imported
    code, or nothing when no frame of it is in the traceback (a SyntaxError says its own line)."""
    machinery = {os.path.abspath(__file__), os.path.abspath(importlib.__file__)}
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<frozen ") and os.path.abspath(frame.filename) not in machinery
    ]
    if not frames:
        return ""
    raised, first = frames[-1], frames[0]
    where = f" (at {raised.filename}:{raised.lineno} in {raised.name}"
    if first is not raised:
        where += f", from {first.filename}:{first.lineno}"
    return where + ")"


def _folder(path: object) -> errors.ConfigurationError:
    return errors.ConfigurationError(
        f"{path} is a folder, not an operator file: run the .py file in it (main.py, say), or the package with -m"
    )


def _import_file(path: pathlib.Path) -> types.ModuleType:
    if path.is_dir():
        raise _folder(path)
    if not path.is_file():
        raise errors.ConfigurationError(f"no such operator file: {path}")
    directory = str(path.parent.resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = f"okt_operator_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise errors.ConfigurationError(f"cannot load {path} as Python: an operator file's name ends in .py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _failed(path, exc) from exc
    except SystemExit as exc:
        sys.modules.pop(name, None)
        raise _exited(path, exc) from exc
    return module


def _import_module(name: str) -> types.ModuleType:
    # A path given to -m was read as a relative import ("TypeError: the 'package' argument is required") or as the
    # module "py" of a package: the file meant is named, and a name Python cannot import is said as such.
    dotted = all(part.isidentifier() for part in name.split("."))
    if (name.endswith(".py") or not dotted) and pathlib.Path(name).is_file():
        raise errors.ConfigurationError(f"{name} is a file, not a module name: run it without -m (okt run {name})")
    if not dotted:
        raise errors.ConfigurationError(
            f"{name!r} is not a module name: dotted Python identifiers such as my_operator.main are expected"
        )
    if str(pathlib.Path.cwd()) not in sys.path:
        sys.path.insert(0, str(pathlib.Path.cwd()))
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # Only when the module (or a package on its path) is the one missing: an import the module itself makes
        # and cannot satisfy (a dependency not installed) is its failure, named as such.
        if exc.name is None or name == exc.name or name.startswith(f"{exc.name}."):
            raise errors.ConfigurationError(f"no module named {name!r}") from exc
        raise _failed(f"module {name}", exc) from exc
    except Exception as exc:
        raise _failed(f"module {name}", exc) from exc
    except SystemExit as exc:
        raise _exited(f"module {name}", exc) from exc


def _is_file_target(target: str, as_module: bool) -> bool:
    # A file that is there is the file meant, whatever its name: read as a module, it was "no module named 'op.txt'".
    return not as_module and (target.endswith(".py") or "/" in target or pathlib.Path(target).is_file())


def shadowed_stdlib_module(target: str, *, as_module: bool = False) -> str | None:
    """The standard-library module the target's top-level name hides, if any (``operator.py`` hides ``operator``).

    Why: ``okt run`` imports the file under a private name, so it runs here; but wherever the file's folder is on
    ``sys.path`` (``ENV PYTHONPATH=/app`` in an image, a test runner's rootdir), ``import operator`` anywhere —
    ``collections`` does it at interpreter start — finds the operator instead, and the process dies at import.
    """
    name = pathlib.PurePath(target).stem if _is_file_target(target, as_module) else target.partition(".")[0]
    return name if name in sys.stdlib_module_names else None


def load_module(target: str, *, as_module: bool = False) -> types.ModuleType:
    if not _is_file_target(target, as_module):
        module = _import_module(target)
        # A folder without __init__.py in the working directory imports as a namespace package, which defines nothing:
        # "okt run operator" said the folder "defines no okt.Reconciler subclass", "okt run operator/" that it is one.
        if not as_module and getattr(module, "__file__", None) is None and pathlib.Path(target).is_dir():
            raise _folder(target)
        return module
    return _import_file(pathlib.Path(target))


def _is_reconciler(value: object) -> bool:
    return (
        inspect.isclass(value)
        and issubclass(value, reconciler.Reconciler)
        and value is not reconciler.Reconciler
        and bool(value.kind)
    )


def reconcilers_in(module: types.ModuleType) -> list[type[reconciler.Reconciler]]:
    """The reconcilers a module runs, explicitly:

    1. the names in its ``__all__``, when it has one;
    2. else the Reconciler subclasses it *defines* (a base class it imports to subclass is not run twice);
    3. else, for an entry-point file that only binds reconcilers defined elsewhere
       (``Memcached = memcached_operator.reconciler_class()``), the ones it binds.
    """
    names = getattr(module, "__all__", None)
    if names is not None:
        listed = [getattr(module, name, None) for name in names]
        return sorted({value for value in listed if _is_reconciler(value)}, key=lambda cls: cls.__name__)  # type: ignore[misc]
    bound = {value for value in vars(module).values() if _is_reconciler(value)}
    defined = {cls for cls in bound if cls.__module__ == module.__name__}
    return sorted(defined or bound, key=lambda cls: cls.__name__)


def _refuse_kindless(module: types.ModuleType, target: str) -> None:
    """Refuse a Reconciler subclass the module defines (or lists in ``__all__``) with no kind, unless one of its
    classes subclasses it (a base that shares hooks).

    Why: a class without a kind is no reconciler, so :func:`reconcilers_in` passes it over; one the author meant to
    run (its ``kind`` forgotten, or misspelt ``Kind``) was left out without a word — ``okt run`` ran the others and
    ``okt gen rbac`` granted the others' permissions only.
    """
    classes = [value for value in vars(module).values() if inspect.isclass(value)]
    names = getattr(module, "__all__", None)
    chosen = (
        [getattr(module, name, None) for name in names]
        if names is not None
        else [cls for cls in classes if cls.__module__ == module.__name__]
    )
    kindless = [
        value.__name__
        for value in chosen
        if inspect.isclass(value)
        and issubclass(value, reconciler.Reconciler)
        and value is not reconciler.Reconciler
        and not value.kind
        and not any(other is not value and issubclass(other, value) for other in classes)
    ]
    if kindless:
        verb, each, them = ("declares", "it", "it") if len(kindless) == 1 else ("declare", "each", "them")
        raise errors.ConfigurationError(
            f"{target}: {', '.join(sorted(kindless))} {verb} no kind: set kind (the kind it reconciles, e.g. "
            f"kind = 'Memcached') on {each}, or subclass {them}"
        )


def _refuse_module_level_handlers(module: types.ModuleType, target: str) -> None:
    """Refuse a function of the module's top level declared ``@okt.every`` or ``@okt.daemon`` (as Kopf's
    ``@kopf.timer`` and ``@kopf.daemon`` are declared) that no class of the module holds.

    Why: okt finds a timer or a daemon among a reconciler's methods only; one at the top level was never called, and
    the operator ran without it, not a word said.
    """
    held = {
        id(member)
        for value in vars(module).values()
        if inspect.isclass(value)
        for klass in value.__mro__
        for member in vars(klass).values()
    }
    for name, value in vars(module).items():
        if not inspect.isfunction(value) or value.__module__ != module.__name__ or id(value) in held:
            continue
        for mark, decorator in ((timers.MARK, "@okt.every"), (daemons.MARK, "@okt.daemon")):
            if getattr(value, mark, None) is not None:
                raise errors.ConfigurationError(
                    f"{target}: {name} is declared {decorator} at the top level of the module, where okt never "
                    f"calls it: a timer or a daemon is a method of a Reconciler class, def {name}(self, ctx)"
                )


def _by_kind_name(
    found: list[type[reconciler.Reconciler]], name: str, resolve: Callable[[str], kinds.Kind]
) -> list[type[reconciler.Reconciler]]:
    """The reconcilers of the kind ``name`` designates (``resolve`` raises for an unknown or ambiguous name)."""
    wanted = resolve(name)

    def group_and_kind(cls: type[reconciler.Reconciler]) -> tuple[str, str] | None:
        if cls.api_version:
            return cls.api_version.rpartition("/")[0], cls.kind
        try:
            kind = resolve(cls.kind)
        except errors.ConfigurationError:
            return None
        return kind.group, kind.kind

    return [cls for cls in found if group_and_kind(cls) == (wanted.group, wanted.kind)]


def _one_per_kind(found: list[type[reconciler.Reconciler]], target: str) -> None:
    by_kind: dict[tuple[str, str], list[str]] = {}
    for cls in found:
        by_kind.setdefault((cls.api_version, cls.kind), []).append(cls.__name__)
    for (api_version, kind), names in sorted(by_kind.items()):
        if len(names) > 1:
            raise errors.ConfigurationError(
                f"{target}: {', '.join(names)} all reconcile {kind} ({api_version}); run one: "
                "choose it with --reconciler NAME or list it in the module's __all__"
            )


def load_reconcilers(
    target: str, *, as_module: bool = False, only: str | None = None
) -> list[type[reconciler.Reconciler]]:
    """The reconcilers the target runs (:func:`reconcilers_in`), or the one named ``only`` (class name or kind).

    Raises:
        okt.errors.ConfigurationError: none found, ``only`` matches none, or two reconcile the same kind.
    """
    return reconcilers_of(load_module(target, as_module=as_module), target, only)


def reconcilers_of(
    module: types.ModuleType,
    target: str,
    only: str | None = None,
    resolve: Callable[[str], kinds.Kind] | None = None,
) -> list[type[reconciler.Reconciler]]:
    """:func:`load_reconcilers` for a module already loaded (``target`` names it in messages).

    ``only`` is a class name or a kind; with ``resolve`` (a client's ``resolve_name``), also any name ``kubectl``
    takes for the kind (``deploy``, ``memcacheds.cache.example.com``), compared by API group and kind.
    """
    _refuse_kindless(module, target)
    _refuse_module_level_handlers(module, target)
    found = reconcilers_in(module)
    if only is not None:
        candidates = {value for value in vars(module).values() if _is_reconciler(value)} | set(found)
        found = sorted(candidates, key=lambda cls: cls.__name__)
    if only is not None:
        named = [cls for cls in found if only in (cls.__name__, cls.kind)]
        if not named and resolve is not None:
            try:
                named = _by_kind_name(found, only, resolve)
            except errors.ConfigurationError as exc:
                raise errors.ConfigurationError(f"{target} has no reconciler named {only!r}: {exc}") from exc
        found = named
        if not found:
            raise errors.ConfigurationError(f"{target} has no reconciler named {only!r}")
    if not found:
        raise errors.ConfigurationError(f"{target} defines no okt.Reconciler subclass (with api_version and kind set)")
    _one_per_kind(found, target)
    return found
