"""``repogen``: a thin click layer over the library API (commands live in ``repogen.commands``)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import click

from . import commands
from .version import __version__


def _pin_hash_seed() -> None:
    """Builds must not depend on string hashing (set iteration order in pickled values).

    Re-executes the CLI once with PYTHONHASHSEED=0 when the seed is not already fixed.
    """
    if os.environ.get("PYTHONHASHSEED") == "0" or os.environ.get("REPOGEN_NO_REEXEC"):
        return
    env = dict(os.environ, PYTHONHASHSEED="0")
    os.execve(sys.executable, [sys.executable, "-m", "repogen", *sys.argv[1:]], env)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repogen")
def cli() -> None:
    """Compile Python inference callables into a static Triton model repository."""


for _module in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
    for _command in importlib.import_module(f"{commands.__name__}.{_module}").COMMANDS:
        cli.add_command(_command)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        _pin_hash_seed()
    cli(prog_name="repogen")
