"""``okt-gen-resource``: OKT's single-dash command line reaches the same generator as ``okt gen resource``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from okt.codegen import okt_compat

MANIFESTS = Path(__file__).parent / "manifests"
GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    ("okt_arguments", "translated"),
    [
        pytest.param(
            ["-type=ConfigMap", "-kind=MyKind", "-group=demo", "-version=v1alpha1", "-path=out", "m.yaml"],
            ["--type=ConfigMap", "--kind=MyKind", "--group=demo", "--version=v1alpha1", "--out=out", "m.yaml"],
            id="equals-form",
        ),
        pytest.param(
            ["-type", "ConfigMap", "-kind", "MyKind", "-path", "out", "m.yaml"],
            ["--type", "ConfigMap", "--kind", "MyKind", "--out", "out", "m.yaml"],
            id="separate-value",
        ),
        pytest.param(
            ["--type=ConfigMap", "--out", "out", "-dictionary=d.yaml"],
            ["--type=ConfigMap", "--out", "out", "--dictionary=d.yaml"],
            id="double-dash-kept",
        ),
        pytest.param(["-list"], ["--list"], id="list"),
        pytest.param(["-h"], ["--help"], id="short-help"),
        pytest.param(["-help"], ["--help"], id="go-help"),
        pytest.param(["-x", "--colour", "red"], ["-x", "--colour", "red"], id="unknown-short-and-double-dashed-left"),
        pytest.param(["-type=Pod", "--", "-odd-name.yaml"], ["--type=Pod", "--", "-odd-name.yaml"], id="after-dashes"),
        # A value that starts with a dash is the flag's, as Go reads it: it was double-dashed ("-dictionary -x.yaml"
        # read a file --x.yaml; "-path -out" was refused as "invalid --out '--out'", a value nobody typed).
        pytest.param(["-path", "-out", "m.yaml"], ["--out", "-out", "m.yaml"], id="dashed-value"),
        pytest.param(["--out", "-list", "-list"], ["--out", "-list", "--list"], id="dashed-value-of-a-dashed-option"),
    ],
)
def test_okt_flags_translate_to_okt_gen_resource_options(okt_arguments: list[str], translated: list[str]) -> None:
    assert okt_compat.translate(okt_arguments) == translated


def run(arguments: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        okt_compat.main(arguments)
    code = exited.value.code
    return code if isinstance(code, int) else 0 if code is None else 1


@pytest.mark.parametrize(
    "arguments",
    [
        ["-type=ConfigMap", "-kind=Memcached", "-group=cache", "-version=v1alpha1", "-path=resources"],
        ["-type", "ConfigMap", "-kind", "Memcached", "-group", "cache", "-version", "v1alpha1", "-path", "resources"],
    ],
)
def test_okt_spelling_generates_the_same_modules(
    arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    assert run([*arguments, "manifests/config_map.yaml"]) == 0
    assert "written  resources/config_map_memcached_gen.py" in capsys.readouterr().out
    for name in ("config_map_memcached_gen.py", "config_map_memcached.py"):
        assert (tmp_path / "resources" / name).read_text() == (GOLDEN / name).read_text()


def test_okt_spelling_errors_are_one_line_with_exit_status_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = run(["-type=Deploymnet", "-kind=MyKind", "-group=demo", "-version=v1alpha1", "m.yaml"])
    assert code == 2
    assert capsys.readouterr().err == "Error: unknown kind 'Deploymnet' (did you mean: Deployment?)\n"


def test_okt_spelling_lists_the_dictionary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["-list"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("KIND")


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        ("-bogus", "No such option '-bogus'. Did you mean '-out'?"),
        ("-typo=ConfigMap", "No such option '-typo'. Did you mean '-type'?"),
        ("-verison", "No such option '-verison'. Did you mean '-version'?"),
        ("-colour=red", "No such option '-colour'."),
        ("-list=yes", "Option '-list' does not take a value."),
    ],
)
def test_a_misspelt_okt_flag_is_named_as_it_was_typed_with_the_flag_meant(
    argument: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was double-dashed for click to read it whole (not as -t -y -p -o), and click named "--bogus", an option
    # nobody typed, and offered "--out" to a user of single-dash flags.
    monkeypatch.chdir(tmp_path)
    assert run([argument, "-kind=MyKind", "m.yaml"]) == 2
    assert capsys.readouterr() == ("", f"Error: {said}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_misspelt_double_dashed_flag_is_named_as_it_was_typed(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--typo=ConfigMap", "-kind=MyKind", "m.yaml"]) == 2
    assert capsys.readouterr().err == "Error: No such option '--typo'. Did you mean '--type'?\n"


@pytest.mark.parametrize("flag", ["-path", "--path", "-dictionary", "-type"])
def test_a_last_flag_without_its_value_is_named_as_it_was_typed(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Left for click, it named the option the flag was translated to ("-path" said "--out", an option nobody typed).
    monkeypatch.chdir(tmp_path)
    assert run(["-kind=MyKind", "m.yaml", flag]) == 2
    assert capsys.readouterr() == ("", f"Error: Option '{flag}' requires an argument.\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        pytest.param(
            ["-type=ConfigMap", "-kind=MyKind", "-group=demo", "-version=v1", "-path=", "m.yaml"],
            "Invalid value for '-path': it is empty: name a folder (. for this one)",
            id="typed-path",
        ),
        pytest.param(
            ["-type=ConfigMap", "-kind=MyKind", "-group=demo", "-version=v1", "-out=", "m.yaml"],
            "Invalid value for '-out': it is empty: name a folder (. for this one)",
            id="typed-out",
        ),
        pytest.param(["-type=ConfigMap", "m.yaml"], "missing options -kind, -group, -version", id="not-typed"),
    ],
)
def test_an_option_okt_gen_resource_names_in_its_error_is_named_as_typed_or_in_okt_spelling(
    arguments: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # okt gen resource's messages named its own options (--out, --kind), which no user of OKT's flags typed.
    monkeypatch.chdir(tmp_path)
    assert run(arguments) == 2
    assert capsys.readouterr() == ("", f"Error: {said}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(["-path=okt.op.orange/example"], id="okt-s-own-makefile"),
        pytest.param(["-path", "github.com/example/memcached_operator"], id="separate-value"),
        pytest.param(["--path=github.com/example/memcached_operator"], id="double-dashed"),
        pytest.param(["-path=example.com/op/api/v1alpha1"], id="the-api-package"),
    ],
)
def test_okt_s_go_import_path_given_as_path_is_refused_and_writes_nothing(
    arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # OKT's -path is the operator's Go import path; OKT wrote its files into the current folder. Taken for okt's
    # --out, OKT's own example made a folder okt.op.orange/example/ (not a package Python imports) and wrote there.
    monkeypatch.chdir(tmp_path)
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    common = ["-type=ConfigMap", "-kind=Memcached", "-group=cache", "-version=v1alpha1"]
    assert run([*common, *arguments, "manifests/config_map.yaml"]) == 2
    flag, _, value = arguments[-1].rpartition("=") if "=" in arguments[-1] else (arguments[0], "", arguments[1])
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", [f"Error: Invalid value for '{flag}': {value!r} is a Go import path{MEANT}"])
    assert [path.name for path in tmp_path.iterdir()] == ["manifests"]


MEANT = (
    " (OKT's -path named the operator's Go package; its files went to the current folder):"
    " name the folder to write into with -out (default: resources)"
)


def test_a_path_with_a_dot_that_is_a_folder_is_written_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copytree(MANIFESTS, tmp_path / "manifests")
    (tmp_path / "my.project").mkdir()
    common = ["-type=ConfigMap", "-kind=Memcached", "-group=cache", "-version=v1alpha1"]
    assert run([*common, "-path=my.project/resources", "manifests/config_map.yaml"]) == 0
    assert "written  my.project/resources/config_map_memcached_gen.py" in capsys.readouterr().out


def test_a_flag_written_without_its_dash_is_named_with_the_flag_meant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # OKT's README writes "version=<operator-api-version>": taken for the manifest, the real manifest was said to be
    # "Got unexpected extra argument (m.yaml)", which named neither the mistake nor the flag.
    monkeypatch.chdir(tmp_path)
    assert run(["-type=ConfigMap", "-kind=MyKind", "-group=demo", "version=v1alpha1", "-path=out", "m.yaml"]) == 2
    said = "'version=v1alpha1' is not a flag: did you mean '-version=v1alpha1'? (a file of that name: after --)"
    assert capsys.readouterr() == ("", f"Error: {said}\n")
    assert list(tmp_path.iterdir()) == []


def test_an_argument_after_dashes_that_looks_like_a_flag_is_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert okt_compat.translate(["-type=Pod", "--", "version=1.yaml"]) == ["--type=Pod", "--", "version=1.yaml"]
