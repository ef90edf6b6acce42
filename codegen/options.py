"""One value per option: the click command every ``okt`` command is made of; and where the generators write.

Why it exists: click keeps the last value of an option given twice and drops the others without a word. ``okt run -l
app=web -l tier=front`` served the front tier of every app, a second ``--kubeconfig`` chose the cluster, and ``okt gen
rbac --namespace ops --namespace shop`` wrote the RBAC of one namespace only. A mistake the user cannot see is refused
instead, in one line, before anything is loaded, asked or written.

Guarantees: repeatable options (``multiple=True``), counts (``-v``) and flags may be given again; any other option
given twice is a :class:`click.UsageError` naming it and how many times it was given. An output path
(:class:`OutPath`) that is empty is refused the same way: ``Path("")`` is ``.``, so ``okt gen deploy --out ''`` (an
unset variable in a Makefile) wrote its tree into the current folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class OneValueCommand(click.Command):
    """A command that refuses an option of one value given more than once (see the module docstring)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            for param in dict.fromkeys(order):
                given = order.count(param)
                repeatable = isinstance(param, click.Option) and (param.multiple or param.count or param.is_flag)
                if given > 1 and isinstance(param, click.Option) and not repeatable:
                    raise click.UsageError(
                        f"{param.get_error_hint(ctx)} is given {given} times: it takes one value (the last would "
                        "replace the others)",
                        ctx,
                    )
        return super().parse_args(ctx, args)


class OutPath(click.Path):
    """The file or folder a command writes to (``--out``, ``--dir``), as a :class:`~pathlib.Path`; an empty value is
    a :class:`click.BadParameter` saying so, before anything is loaded or written."""

    def __init__(self, *, dir_okay: bool = True, file_okay: bool = True, allow_dash: bool = False) -> None:
        super().__init__(dir_okay=dir_okay, file_okay=file_okay, allow_dash=allow_dash, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | bytes) and not value:
            where = "a folder (. for this one)" if not self.file_okay else "a file"
            dash = ", or - for stdout" if self.allow_dash else ""
            self.fail(f"it is empty: name {where}{dash}", param, ctx)
        return super().convert(value, param, ctx)
