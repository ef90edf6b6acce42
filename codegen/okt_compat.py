"""``okt-gen-resource``: OKT's resource generator command line, on okt's generator.

Why it exists: OKT users know ``okt-gen-resource -type=ConfigMap -kind=MyKind -group=demo -version=v1alpha1
-path=DIR manifest.yaml`` (Go's single-dash flags). This entry point accepts that spelling — ``-flag=value``,
``-flag value`` and the double-dash forms — and runs the same ``okt gen resource`` command, so existing scripts and
habits keep working. OKT's ``-path`` is okt's ``--out``; OKT's own value for it, the operator's Go import path
(``-path=github.com/example/memcached-operator``: OKT wrote its files into the current folder), is refused.

Guarantees: a translated command behaves exactly like ``okt gen resource`` (same files, same messages, exit status
2 on any error); arguments that are not flags pass through untouched, and so do a flag's value given apart (``-path
-odd``, as Go's flag package reads it) and everything after ``--``.
"""

from __future__ import annotations

import pathlib
import re
import sys
from collections.abc import Sequence

import click

from okt.codegen import cli

FLAGS = {
    "type": "--type",
    "kind": "--kind",
    "group": "--group",
    "version": "--version",
    "path": "--out",
    "out": "--out",
    "dictionary": "--dictionary",
    "crd": "--crd",
}
"""OKT flag name -> ``okt gen resource`` option (every one takes a value)."""

SWITCHES = {"list": "--list", "h": "--help", "help": "--help"}
"""OKT flag name -> ``okt gen resource`` option (flags without a value)."""


GO_SPELLING = {option: f"-{name}" for name, option in FLAGS.items() if name != "out"}
"""``okt gen resource`` option -> the OKT flag an error names it by when it was not typed (a missing option)."""

_GO_IMPORT_PATH = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/.+")
"""A Go import path: a domain for first element (``github.com/...``, ``okt.op.orange/example``)."""

_OPTION = re.compile(r"--(?:type|kind|group|version|out|dictionary|crd)\b")


def translate(arguments: Sequence[str], typed: dict[str, str] | None = None) -> list[str]:
    """OKT-style arguments -> ``okt gen resource`` arguments; ``typed``, when given, is filled with each option
    translated -> the flag as it was typed (``{"--out": "-path"}``), for the messages that name it.

    Raises:
        click.NoSuchOption: an unknown Go flag (``-bogus``, ``-typo=ConfigMap``), named as it was typed, with the
            flag meant when one is close. Left for click, it was double-dashed to be read whole (single-dashed,
            click reads ``-typo`` as ``-t -y -p -o``) and reported as ``--bogus``, an option nobody typed.
        click.BadOptionUsage: a Go flag without a value given one (``-list=yes``), or a flag that takes one last
            with none after it (``-path``), named as it was typed (click named the option it was translated to,
            ``--out``).
        click.UsageError: a flag written without its dash (``version=v1alpha1``, as OKT's README has it), which was
            taken for the manifest, and the manifest named as an extra argument.
        click.BadParameter: ``-path`` given a Go import path, as OKT's generator took it (see
            :func:`_check_path`).
    """
    translated: list[str] = []
    value_next = False  # the argument is the value of the flag before it (``-path DIR``): taken as it is, as Go does
    for index, argument in enumerate(arguments):
        name, has_value, value = argument.lstrip("-").partition("=")
        if value_next:
            _check_path(arguments[index - 1], argument)
            translated.append(argument)
            value_next = False
        elif argument == "--":
            return [*translated, *arguments[index:]]
        elif not argument.startswith("-") and has_value and name in FLAGS:
            raise click.UsageError(
                f"{argument!r} is not a flag: did you mean '-{argument}'? (a file of that name: after --)"
            )
        elif not argument.startswith("-") or argument == "-":
            translated.append(argument)
        elif name in FLAGS:
            if has_value:
                _check_path(argument.partition("=")[0], value)
            translated += [f"{FLAGS[name]}={value}"] if has_value else [FLAGS[name]]
            if typed is not None:
                typed[FLAGS[name]] = argument.partition("=")[0]
            value_next = not has_value
        elif name in SWITCHES and not has_value:
            translated.append(SWITCHES[name])
        elif name in SWITCHES and not argument.startswith("--"):
            raise click.BadOptionUsage(f"-{name}", f"Option '-{name}' does not take a value.")
        elif not argument.startswith("--") and len(name) > 1:
            raise click.NoSuchOption(f"-{name}", possibilities=[f"-{flag}" for flag in sorted({*FLAGS, *SWITCHES})])
        else:
            translated.append(argument)
    if value_next:
        flag = arguments[-1]
        raise click.BadOptionUsage(flag, f"Option '{flag}' requires an argument.")
    return translated


def _check_path(flag: str, value: str) -> None:
    """Refuse OKT's ``-path`` value, the operator's Go import path, given to ``flag`` (``-path``, ``--path``).

    Taken for okt's ``--out``, ``-path=okt.op.orange/example`` (OKT's own example) wrote into a new folder
    ``okt.op.orange/example/``, which no Python imports as a package, where OKT wrote into the current folder. A value
    whose first element is a folder that exists (``my.project/resources``) is a folder, and kept.

    Raises:
        click.BadParameter: ``value`` is a Go import path (a domain for first element) and no such folder exists.
    """
    first = value.partition("/")[0]
    if flag.lstrip("-") != "path" or not _GO_IMPORT_PATH.fullmatch(value) or pathlib.Path(first).is_dir():
        return
    raise click.BadParameter(
        f"{value!r} is a Go import path (OKT's -path named the operator's Go package; its files went to the current"
        " folder): name the folder to write into with -out (default: resources)",
        param_hint=f"'{flag}'",
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``okt-gen-resource`` with ``argv`` (default: the process arguments); exits like any click command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    typed: dict[str, str] = {}
    try:
        translated = translate(arguments, typed)
        code = cli.resource_command.main(args=translated, prog_name="okt-gen-resource", standalone_mode=False)
    except click.ClickException as exc:
        # okt's messages name okt's options (``Invalid value for '--out'``, ``missing options --kind``): said in the
        # spelling the user typed, or OKT's for an option not typed. An unknown double-dashed option is named as
        # typed already, and the option meant in the same spelling.
        message = exc.format_message()
        if not isinstance(exc.__cause__ or exc, click.NoSuchOption):  # okt gen's commands say it as a GenError
            message = _OPTION.sub(lambda found: typed.get(found[0], GO_SPELLING[found[0]]), message)
        error = cli.GenError(message)
        error.show()
        sys.exit(error.exit_code)
    except click.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
