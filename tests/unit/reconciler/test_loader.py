"""Which reconcilers ``okt run`` (and ``okt gen``) takes from a file is explicit."""

from __future__ import annotations

import pathlib
import textwrap

import pytest

from okt import errors
from okt.kube import kinds
from okt.reconciler import loader
from okt.testing import fake

BASE = """
import okt

class Base(okt.Reconciler):
    api_version = "example.io/v1"
    kind = "Widget"
"""


def write(directory: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def base(tmp_path: pathlib.Path) -> pathlib.Path:
    unique = f"base_{tmp_path.name.replace('-', '_')}"
    write(tmp_path, f"{unique}.py", BASE)
    return tmp_path / unique


def names(found: list[type]) -> list[str]:
    return [cls.__name__ for cls in found]


def test_a_subclass_of_an_imported_reconciler_runs_alone(tmp_path: pathlib.Path, base: pathlib.Path) -> None:
    path = write(tmp_path, "op.py", f"from {base.name} import Base\n\nclass Custom(Base):\n    name = 'custom'\n")

    assert names(loader.load_reconcilers(str(path))) == ["Custom"]


def test_all_says_which_reconcilers_run(tmp_path: pathlib.Path, base: pathlib.Path) -> None:
    text = f"from {base.name} import Base\n\nclass Custom(Base):\n    pass\n\n__all__ = ['Base']\n"
    path = write(tmp_path, "op.py", text)

    assert names(loader.load_reconcilers(str(path))) == ["Base"]


def test_an_entry_point_that_only_binds_a_reconciler_runs_it(tmp_path: pathlib.Path, base: pathlib.Path) -> None:
    path = write(tmp_path, "op.py", f"import {base.name}\n\nWidget = {base.name}.Base\n")

    assert names(loader.load_reconcilers(str(path))) == ["Base"]


def test_two_reconcilers_of_one_kind_are_refused_in_one_line(tmp_path: pathlib.Path, base: pathlib.Path) -> None:
    text = f"from {base.name} import Base\n\nclass One(Base):\n    pass\n\nclass Two(Base):\n    pass\n"
    path = write(tmp_path, "op.py", text)

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_reconcilers(str(path))

    message = str(raised.value)
    assert "One, Two all reconcile Widget (example.io/v1)" in message
    assert "--reconciler NAME" in message and "\n" not in message


def test_reconciler_picks_one_of_them_by_class_name_or_kind(tmp_path: pathlib.Path, base: pathlib.Path) -> None:
    text = f"from {base.name} import Base\n\nclass One(Base):\n    pass\n\nclass Two(Base):\n    pass\n"
    path = write(tmp_path, "op.py", text)

    assert names(loader.load_reconcilers(str(path), only="Two")) == ["Two"]
    assert names(loader.load_reconcilers(str(path), only="Base")) == ["Base"]
    with pytest.raises(errors.ConfigurationError, match="has no reconciler named 'Three'"):
        loader.load_reconcilers(str(path), only="Three")


@pytest.mark.parametrize(
    ("target", "as_module", "shadowed"),
    [
        ("operator.py", False, "operator"),
        ("/app/operator.py", False, "operator"),
        ("deploy/logging.py", False, "logging"),
        ("main.py", False, None),
        ("memcached_operator.py", False, None),
        ("queue", True, "queue"),
        ("types.reconcilers", True, "types"),
        ("my_operator.operator", True, None),
        ("my_operator", True, None),
    ],
)
def test_a_target_named_like_a_standard_module_is_found(target: str, as_module: bool, shadowed: str | None) -> None:
    assert loader.shadowed_stdlib_module(target, as_module=as_module) == shadowed


KINDS = """
import okt

class Deployments(okt.Reconciler):
    api_version = "apps/v1"
    kind = "Deployment"

class Things(okt.Reconciler):
    kind = "things.example.io"  # named as kubectl names it

class Maps(okt.Reconciler):
    kind = "configmap"
"""


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        ("Deployments", ["Deployments"]),
        ("deployments", ["Deployments"]),
        ("deployments.apps", ["Deployments"]),
        ("Thing", ["Things"]),
        ("thing", ["Things"]),
        ("configmaps", ["Maps"]),
    ],
)
def test_only_takes_a_class_name_or_the_kind_as_kubectl_names_it(
    tmp_path: pathlib.Path, only: str, expected: list[str]
) -> None:
    path = write(tmp_path, "kinds_op.py", KINDS)
    client = fake.FakeClient(kinds=[kinds.Kind("example.io/v1", "Thing", "things")])
    module = loader.load_module(str(path))
    assert names(loader.reconcilers_of(module, str(path), only=only, resolve=client.resolve_name)) == expected


def test_a_kind_name_nothing_serves_is_one_line_naming_the_reconciler_asked_for(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "kinds_op2.py", KINDS)
    module = loader.load_module(str(path))
    with pytest.raises(errors.ConfigurationError) as caught:
        loader.reconcilers_of(module, "op.py", only="gizmo", resolve=fake.FakeClient().resolve_name)
    assert str(caught.value).startswith("op.py has no reconciler named 'gizmo': the server serves no kind named")


def test_a_module_whose_own_import_is_missing_names_that_import_not_the_module(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = f"pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    write(tmp_path / package, "__init__.py", "")
    op = write(tmp_path / package, "op.py", "import okt_missing_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(f"{package}.op", as_module=True)

    assert str(raised.value) == (
        f"module {package}.op failed to import: ModuleNotFoundError: No module named 'okt_missing_dependency_xyz' "
        f"(at {op}:1 in <module>)"
    )


@pytest.mark.parametrize("missing", ["{package}.nope", "{package}_absent.op"])
def test_a_module_that_is_not_there_is_named(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    package = f"pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    write(tmp_path / package, "__init__.py", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    name = missing.format(package=package)

    with pytest.raises(errors.ConfigurationError, match=f"^no module named '{name}'$"):
        loader.load_module(name, as_module=True)


def test_a_module_that_exits_while_importing_says_so(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # SystemExit passed through the loader: okt run ended with the module's status and not a word.
    package = f"pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    write(tmp_path / package, "__init__.py", "")
    write(tmp_path / package, "op.py", "import sys\nsys.exit(2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(f"{package}.op", as_module=True)

    assert str(raised.value) == (
        f"module {package}.op exited (SystemExit 2) while importing: "
        "start anything it runs as a script under if __name__ == '__main__':"
    )


def test_a_file_whose_import_raises_names_where_it_raised_and_the_operators_line_that_led_there(
    tmp_path: pathlib.Path,
) -> None:
    # Only "ZeroDivisionError: division by zero" was said: where, in the author's code, was nowhere to be read.
    helper_name = f"helper_{tmp_path.name.replace('-', '_')}"
    helper = write(tmp_path, f"{helper_name}.py", "def ratio():\n    return 1 / 0\n")
    operator = write(tmp_path, "ratio_op.py", f"import okt\nimport {helper_name}\n\nRATIO = {helper_name}.ratio()\n")

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(str(operator))

    assert str(raised.value) == (
        f"{operator} failed to import: ZeroDivisionError: division by zero (at {helper}:2 in ratio, from {operator}:4)"
    )


def test_a_module_whose_import_raises_in_its_own_line_names_that_line_once(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = f"pkg_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    write(tmp_path / package, "__init__.py", "")
    op = write(tmp_path / package, "op.py", "import okt\n\nLIMIT = int('ten')\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(f"{package}.op", as_module=True)

    assert str(raised.value) == (
        f"module {package}.op failed to import: ValueError: invalid literal for int() with base 10: 'ten' "
        f"(at {op}:3 in <module>)"
    )


KINDLESS = """
import okt

class Shared(okt.Reconciler):
    api_version = "example.io/v1"

class Widgets(Shared):
    kind = "Widget"

class Gadgets(okt.Reconciler):
    api_version = "example.io/v1"
"""


@pytest.mark.parametrize("listed", [False, True])
def test_a_reconciler_the_file_defines_without_a_kind_is_refused_in_one_line(
    tmp_path: pathlib.Path, listed: bool
) -> None:
    # Gadgets was left out without a word: okt run ran Widgets only, okt gen rbac granted Widgets only.
    text = KINDLESS + ('__all__ = ["Gadgets", "Widgets"]\n' if listed else "")
    path = write(tmp_path, "op.py", text)

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.reconcilers_of(loader.load_module(str(path)), "op.py")

    assert str(raised.value) == (
        "op.py: Gadgets declares no kind: set kind (the kind it reconciles, e.g. kind = 'Memcached') on it, "
        "or subclass it"
    )


def test_a_base_without_a_kind_that_the_file_subclasses_is_not_run(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, "op.py", KINDLESS.replace("class Gadgets(okt.Reconciler)", "class Gadgets(Shared)"))
    path.write_text(path.read_text() + "    kind = 'Gadget'\n")

    assert names(loader.reconcilers_of(loader.load_module(str(path)), "op.py")) == ["Gadgets", "Widgets"]


@pytest.mark.parametrize("given", ["./op.py", "op.py", "sub/op.py"])
def test_a_file_given_as_a_module_is_refused_naming_the_file_to_run(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # "./op.py" read as a relative import: "TypeError: the 'package' argument is required to perform a relative
    # import"; "op.py" as the module py of a package op.
    (tmp_path / "sub").mkdir()
    write(tmp_path, "op.py", BASE)
    write(tmp_path / "sub", "op.py", BASE)
    monkeypatch.chdir(tmp_path)

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(given, as_module=True)

    assert str(raised.value) == f"{given} is a file, not a module name: run it without -m (okt run {given})"


@pytest.mark.parametrize("given", ["./nothing.py", "pkg/op", "op-v2", ".op"])
def test_a_module_name_python_cannot_import_is_refused_as_such(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.chdir(tmp_path)

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(given, as_module=True)

    assert str(raised.value) == (
        f"{given!r} is not a module name: dotted Python identifiers such as my_operator.main are expected"
    )


@pytest.mark.parametrize("given", ["operator_folder", "operator_folder/"])
def test_a_folder_without_init_given_as_the_operator_is_named_as_a_folder_with_or_without_its_slash(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    # Without the slash it was imported as a namespace package: "operator_folder defines no okt.Reconciler subclass".
    (tmp_path / "operator_folder").mkdir()
    write(tmp_path / "operator_folder", "main.py", BASE)
    monkeypatch.chdir(tmp_path)

    with pytest.raises(errors.ConfigurationError) as raised:
        loader.load_module(given)

    assert str(raised.value) == (
        f"{given.rstrip('/')} is a folder, not an operator file: run the .py file in it (main.py, say), or the package "
        "with -m"
    )


@pytest.mark.parametrize(
    ("decorator", "said"), [("@okt.every(seconds=30)", "@okt.every"), ("@okt.daemon", "@okt.daemon")]
)
def test_a_timer_or_daemon_at_the_top_level_of_the_module_is_refused(
    tmp_path: pathlib.Path, decorator: str, said: str
) -> None:
    # Declared as Kopf's @kopf.timer is, at the top level: okt looks for timers among a reconciler's methods only, so
    # it was never called, and the operator ran without it.
    path = write(
        tmp_path,
        "main.py",
        BASE + f"\n{decorator}\ndef tick(ctx):\n    pass\n",
    )
    with pytest.raises(
        errors.ConfigurationError,
        match=rf"^{path}: tick is declared {said} at the top level of the module, where okt never calls it: a timer "
        r"or a daemon is a method of a Reconciler class, def tick\(self, ctx\)$",
    ):
        loader.load_reconcilers(str(path))


def test_a_timer_defined_at_the_top_level_and_held_by_a_reconciler_is_run(tmp_path: pathlib.Path) -> None:
    text = "import okt\n\n@okt.every(seconds=30)\ndef tick(self, ctx):\n    pass\n\n" + BASE.replace("import okt\n", "")
    path = write(tmp_path, "main.py", text + "    tick = tick\n")
    assert names(loader.load_reconcilers(str(path))) == ["Base"]
