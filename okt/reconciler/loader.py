"""Find the reconcilers of an operator: a Python file (``okt run operator.py``) or a module (``okt run -m pkg.op``).

Errors are :class:`okt.errors.ConfigurationError` with one readable line: a missing file, a module that fails to
import (its exception, not a traceback), a module without a Reconciler subclass.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pathlib
import sys
import types

from okt import errors
from okt.reconciler import reconciler


def _import_file(path: pathlib.Path) -> types.ModuleType:
    if not path.is_file():
        raise errors.ConfigurationError(f"no such operator file: {path}")
    directory = str(path.parent.resolve())
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = f"okt_operator_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise errors.ConfigurationError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise errors.ConfigurationError(f"{path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _import_module(name: str) -> types.ModuleType:
    if str(pathlib.Path.cwd()) not in sys.path:
        sys.path.insert(0, str(pathlib.Path.cwd()))
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise errors.ConfigurationError(f"no module named {name!r}") from exc
    except Exception as exc:
        raise errors.ConfigurationError(f"module {name} failed to import: {type(exc).__name__}: {exc}") from exc


def load_module(target: str, *, as_module: bool = False) -> types.ModuleType:
    looks_like_file = target.endswith(".py") or "/" in target
    if as_module or not looks_like_file:
        return _import_module(target)
    return _import_file(pathlib.Path(target))


def reconcilers_in(module: types.ModuleType) -> list[type[reconciler.Reconciler]]:
    found = [
        value
        for value in vars(module).values()
        if inspect.isclass(value)
        and issubclass(value, reconciler.Reconciler)
        and value is not reconciler.Reconciler
        and value.kind
        and value.api_version
    ]
    return sorted(set(found), key=lambda cls: cls.__name__)


def load_reconcilers(
    target: str, *, as_module: bool = False, only: str | None = None
) -> list[type[reconciler.Reconciler]]:
    """The Reconciler subclasses (with ``api_version`` and ``kind``) the target defines or imports."""
    module = load_module(target, as_module=as_module)
    found = reconcilers_in(module)
    if only is not None:
        found = [cls for cls in found if only in (cls.__name__, cls.kind)]
        if not found:
            raise errors.ConfigurationError(f"{target} has no reconciler named {only!r}")
    if not found:
        raise errors.ConfigurationError(f"{target} defines no okt.Reconciler subclass (with api_version and kind set)")
    return found
