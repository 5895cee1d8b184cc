"""``repogen``: a thin click layer over the library API."""

from __future__ import annotations

import os
import sys
import time

import click

from .build import build_app
from .errors import BuildError
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


@cli.command()
@click.argument("app")
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Repository directory to write.")
@click.option(
    "--app-dir",
    type=click.Path(exists=True, file_okay=False),
    help="Directory of the user's project: modules under it are pickled by value (default: the app file's directory).",
)
@click.option("--force", is_flag=True, help="Replace OUTPUT even if it holds files repogen did not write.")
def build(app: str, output: str, app_dir: str | None, force: bool) -> None:
    """Build APP (path/to/app.py:attr or package.module:attr) into a model repository."""
    started = time.perf_counter()
    try:
        result = build_app(app, output, app_dir=app_dir, force=force)
    except BuildError as exc:
        raise click.ClickException(str(exc)) from exc
    names = ", ".join(m.name for m in result.spec.models)
    click.echo(
        f"Built {len(result.spec.models)} model(s) into {output} in {time.perf_counter() - started:.2f}s: {names}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        _pin_hash_seed()
    cli(prog_name="repogen")
