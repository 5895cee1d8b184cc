"""``repogen``: a thin click layer over the library API (commands live in ``repogen.commands``).

One exit-code rule for every command: a usage error (a missing argument, an unknown option, a value
an option does not accept, options that contradict each other) is click's, exit status 2, with the
command's usage line: click finds some itself, and the library raises
:class:`~repogen.errors.UsageError` for the others, which is turned into click's here. Any other
:class:`~repogen.errors.RepogenError` (a user's mistake found by repogen, or an environment problem) is
printed here as ``Error: <message>``, exit status 1. Commands therefore never re-wrap repogen's errors.
"""

from __future__ import annotations

import importlib
import pkgutil
import signal
import sys
import warnings
from typing import Any

import click

from . import commands
from .errors import RepogenError, RepogenWarning, UsageError
from .fixed_seed import restart_with_fixed_seed
from .version import __version__


class _Repogen(click.Group):
    """The command group; the one place a :class:`RepogenError` becomes ``Error: ...`` and its exit status.

    Commands load lazily: ``repogen NAME`` imports ``repogen.commands.NAME`` alone (every module's
    ``COMMANDS`` only for a name no module is called, and for ``--help``), so an everyday command does not
    pay for the compiler, protobuf or gRPC that other commands import.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        _load_all(self)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _command_modules():
            _load(self, cmd_name)
        if cmd_name not in self.commands:
            _load_all(self)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("default", RepogenWarning)  # each message once
            warnings.showwarning = _show_warning
            try:
                return super().invoke(ctx)
            except UsageError as exc:  # shown as click shows its own: the command's usage line, exit status 2
                raise click.UsageError(str(exc), _command_context(self, ctx)) from None
            except RepogenError as exc:
                click.echo(f"Error: {exc}", err=True)  # as click prints its own ClickException
                ctx.exit(exc.exit_code)


_python_showwarning = warnings.showwarning


def _show_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """A :class:`RepogenWarning` as one ``Warning: ...`` line on stderr; any other warning as Python shows it."""
    if issubclass(category, RepogenWarning):
        click.echo(f"Warning: {message}", err=True)
    else:
        _python_showwarning(message, category, *args, **kwargs)


@click.group(cls=_Repogen, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repogen")
def cli() -> None:
    """Compile Python inference callables into a static Triton model repository."""


def _command_context(group: click.Group, ctx: click.Context) -> click.Context:
    """A context of the command that ran (for its usage line); its own is gone once it has raised."""
    name = ctx.invoked_subcommand
    command = group.get_command(ctx, name) if name else None
    return click.Context(command, info_name=name, parent=ctx) if command is not None else ctx


def _command_modules() -> list[str]:
    """The modules of ``repogen.commands``; each may expose ``COMMANDS`` (a module of helpers does not)."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__))


def _load(group: click.Group, module: str) -> None:
    for command in getattr(importlib.import_module(f"{commands.__name__}.{module}"), "COMMANDS", ()):
        group.add_command(command)


def _load_all(group: click.Group) -> None:
    for module in _command_modules():
        _load(group, module)


# Commands that run until stopped and promise that Ctrl+C stops everything they started, in every phase; infer,
# whose interrupted stream or call is cancelled on the server (a token stream may run for minutes).
_STOPPED_BY_CTRL_C = ("infer", "serve", "tune")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        restart_with_fixed_seed()  # builds must not depend on string hashing (repogen.fixed_seed)
    if len(sys.argv) > 1 and sys.argv[1] in _STOPPED_BY_CTRL_C and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started with SIGINT ignored (`cmd &` in a script, some CI runners), Python raises no KeyboardInterrupt,
        # and the processes these commands start inherit the ignore: serve's build phase and tune would then
        # outlive Ctrl+C while serve's serving phase (its own handler, as tritonserver's) stops, and infer would
        # run its stream to the end instead of cancelling it on the server. One rule for
        # every phase, as tritonserver has: SIGINT stops them whatever disposition they inherited.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    cli(prog_name="repogen")
