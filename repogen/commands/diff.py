"""``repogen diff``."""

from __future__ import annotations

from pathlib import Path

import click

from ..built.diff import diff_repositories, update_expected


@click.command()
@click.argument("expected", type=click.Path(file_okay=False))
@click.argument("actual", type=click.Path(exists=True, file_okay=False))
@click.option("--update", is_flag=True, help="Rewrite EXPECTED as a copy of ACTUAL (accept the new output).")
def diff(expected: str, actual: str, update: bool) -> None:
    """Compare the golden repository EXPECTED with ACTUAL; exit 1 on any difference."""
    if update:
        _update(expected, actual)
        return
    try:
        result = diff_repositories(expected, actual)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    if result.clean:
        click.echo(result.summary())
        return
    click.echo(result.render(summary=False), nl=False)
    raise click.ClickException(f"{result.summary()}; if ACTUAL is right, rerun with --update")


def _update(expected: str, actual: str) -> None:
    before = diff_repositories(expected, actual) if Path(expected).is_dir() else None
    if before is not None and before.clean:
        click.echo(f"{expected} already matches {actual}; nothing to update")
        return
    try:
        update_expected(expected, actual)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    change = f" ({before.summary()})" if before is not None else " (created)"
    click.echo(f"Updated {expected} from {actual}{change}")


COMMANDS = [diff]
