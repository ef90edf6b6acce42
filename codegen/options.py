"""One value per option: the click command every ``okt`` command is made of.

Why it exists: click keeps the last value of an option given twice and drops the others without a word. ``okt run -l
app=web -l tier=front`` served the front tier of every app, a second ``--kubeconfig`` chose the cluster, and ``okt gen
rbac --namespace ops --namespace shop`` wrote the RBAC of one namespace only. A mistake the user cannot see is refused
instead, in one line, before anything is loaded, asked or written.

Guarantees: repeatable options (``multiple=True``), counts (``-v``) and flags may be given again; any other option
given twice is a :class:`click.UsageError` naming it and how many times it was given.
"""

from __future__ import annotations

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
