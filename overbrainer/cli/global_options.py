"""A click group whose own options also work after the command name (`overbrainer run -C demo`)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

import click

GLOBAL_OPTIONS_EPILOG = (
    "The options above go before the command or after it: "
    "`overbrainer -C demo run` is `overbrainer run -C demo`."
)


def _own_options(command: click.Command) -> dict[str, bool]:
    """Each option name of `command` (`-C`, `--events`, …) and whether it takes a value."""
    names: dict[str, bool] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.is_eager:
            takes_value = not (param.is_flag or param.count)
            for name in (*param.opts, *param.secondary_opts):
                names[name] = takes_value
    return names


def _split(token: str, names: dict[str, bool]) -> tuple[str, str | None] | None:
    """The option name `token` starts with and its attached value (`--events=F`, `-CDIR`)."""
    if token in names:
        return token, None
    if token.startswith("--"):
        name, sep, value = token.partition("=")
        return (name, value) if sep and names.get(name) else None
    short = token[:2]
    if len(token) > 2 and names.get(short):
        return short, token[2:]
    return None


def hoist_global_options(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """`args` with `group`'s options found after the command name moved before it.

    The words are walked the way click will parse them: the command chain is followed through
    subgroups, a subcommand's own options keep their values (and win over a global option of
    the same name), and nothing after `--` moves.
    """
    globals_ = _own_options(group)
    front: list[str] = []
    rest: list[str] = []
    command: click.Command | None = group
    own: dict[str, bool] = {}
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token == "--":
            rest.extend(args[index - 1 :])
            break
        hit = _split(token, globals_)
        mine = _split(token, own)
        if hit is not None and mine is None:
            name, value = hit
            if value is None and globals_[name]:
                if index == len(args):
                    if ctx.resilient_parsing:  # completing the value: leave it for click
                        rest.append(token)
                        break
                    raise click.BadOptionUsage(name, f"Option '{name}' requires an argument.", ctx)
                front.extend((token, args[index]))
                index += 1
            else:
                front.append(token)
            continue
        rest.append(token)
        if mine is not None:
            name, value = mine
            if value is None and own[name] and index < len(args):
                rest.append(args[index])
                index += 1
        elif not token.startswith("-") and isinstance(command, click.Group):
            command = command.get_command(ctx, token)
            own = {} if command is None else _own_options(command)
    return front + rest


class GlobalOptionsGroup(click.Group):
    """The top-level group: its options are accepted before or after the command name.

    Its commands are loaded on use: `lazy_commands` maps each name to the module that adds it
    to the group when imported, so a command imports only its own module (and `--help` and
    completion import them all).
    """

    lazy_commands: Mapping[str, str] = MappingProxyType({})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Move the group's own options found after the command name before it, then parse."""
        return super().parse_args(ctx, hoist_global_options(self, ctx, args))

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, loaded or not."""
        return sorted(set(self.commands) | set(self.lazy_commands))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's; a mistyped name first loads every command, so that click's «Did you
        mean» (drawn from the loaded ones) can name any of them."""
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            for name in self.lazy_commands:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, importing its module the first time it is asked for."""
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            importlib.import_module(self.lazy_commands[cmd_name])
        return super().get_command(ctx, cmd_name)
