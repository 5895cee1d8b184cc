"""``repogen build``."""

from __future__ import annotations

import time

import click

from ..build import build_app
from ..errors import BuildError


@click.command()
@click.argument("app")
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False), help="Repository directory to write.")
@click.option(
    "--app-dir",
    type=click.Path(exists=True, file_okay=False),
    help="The user's project directory: modules under it are pickled by value (default: the app file's directory).",
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
    elapsed = time.perf_counter() - started
    click.echo(f"Built {len(result.spec.models)} model(s) into {output} in {elapsed:.2f}s: {names}")


COMMANDS = [build]
