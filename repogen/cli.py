"""``repogen``: a thin click layer over the library API (commands live in ``repogen.commands``).

One exit-code rule for every command: a usage error (a missing argument, an unknown option, a value
an option does not accept) is click's, exit status 2; any :class:`~repogen.errors.RepogenError` (a
user's mistake found by repogen, or an environment problem) is printed here as ``Error: <message>``,
with the error's ``exit_code`` (``repogen.errors``: 1). Commands therefore never re-wrap repogen's
errors themselves.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from typing import Any

import click

from . import commands
from .errors import RepogenError
from .version import __version__


def _pin_hash_seed() -> None:
    """Builds must not depend on string hashing (set iteration order in pickled values).

    Re-executes the CLI once with PYTHONHASHSEED=0 when the seed is not already fixed.
    """
    if os.environ.get("PYTHONHASHSEED") == "0" or os.environ.get("REPOGEN_NO_REEXEC"):
        return
    env = dict(os.environ, PYTHONHASHSEED="0")
    os.execve(sys.executable, [sys.executable, "-m", "repogen", *sys.argv[1:]], env)


class _Repogen(click.Group):
    """The command group; the one place a :class:`RepogenError` becomes ``Error: ...`` and its exit status."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RepogenError as exc:
            click.echo(f"Error: {exc}", err=True)  # as click prints its own ClickException
            ctx.exit(exc.exit_code)


@click.group(cls=_Repogen, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repogen")
def cli() -> None:
    """Compile Python inference callables into a static Triton model repository."""


for _module in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
    for _command in getattr(importlib.import_module(f"{commands.__name__}.{_module}"), "COMMANDS", ()):
        cli.add_command(_command)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        _pin_hash_seed()
    cli(prog_name="repogen")
