"""``okt-gen-resource``: OKT's resource generator command line, on okt's generator.

Why it exists: OKT users know ``okt-gen-resource -type=ConfigMap -kind=MyKind -group=demo -version=v1alpha1
-path=DIR manifest.yaml`` (Go's single-dash flags). This entry point accepts that spelling — ``-flag=value``,
``-flag value`` and the double-dash forms — and runs the same ``okt gen resource`` command, so existing scripts and
habits keep working. OKT's ``-path`` is okt's ``--out``.

Guarantees: a translated command behaves exactly like ``okt gen resource`` (same files, same messages, exit status
2 on any error); arguments that are not flags pass through untouched, and so do a flag's value given apart (``-path
-odd``, as Go's flag package reads it) and everything after ``--``.
"""

from __future__ import annotations

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


def translate(arguments: Sequence[str]) -> list[str]:
    """OKT-style arguments -> ``okt gen resource`` arguments.

    Raises:
        click.NoSuchOption: an unknown Go flag (``-bogus``, ``-typo=ConfigMap``), named as it was typed, with the
            flag meant when one is close. Left for click, it was double-dashed to be read whole (single-dashed,
            click reads ``-typo`` as ``-t -y -p -o``) and reported as ``--bogus``, an option nobody typed.
        click.BadOptionUsage: a Go flag without a value given one (``-list=yes``), or a flag that takes one last
            with none after it (``-path``), named as it was typed (click named the option it was translated to,
            ``--out``).
    """
    translated: list[str] = []
    value_next = False  # the argument is the value of the flag before it (``-path DIR``): taken as it is, as Go does
    for index, argument in enumerate(arguments):
        name, has_value, value = argument.lstrip("-").partition("=")
        if value_next:
            translated.append(argument)
            value_next = False
        elif argument == "--":
            return [*translated, *arguments[index:]]
        elif not argument.startswith("-") or argument == "-":
            translated.append(argument)
        elif name in FLAGS:
            translated += [f"{FLAGS[name]}={value}"] if has_value else [FLAGS[name]]
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


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``okt-gen-resource`` with ``argv`` (default: the process arguments); exits like any click command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        translated = translate(arguments)
    except click.UsageError as exc:
        error = cli.GenError(exc.format_message())
        error.show()
        sys.exit(error.exit_code)
    cli.resource_command.main(args=translated, prog_name="okt-gen-resource")
