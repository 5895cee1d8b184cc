"""``repogen inspect``."""

from __future__ import annotations

import click

from ..ondisk.describe import describe_repository, to_json, to_text
from ..ondisk.mermaid import to_mermaid


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (sorted keys, deterministic).")
@click.option("--mermaid", is_flag=True, help="A Mermaid flowchart of ensemble steps (and BLS calls).")
def inspect(repository: str, as_json: bool, mermaid: bool) -> None:
    """Describe REPOSITORY: models, versions, tensors, batching, instances, ensemble steps."""
    if as_json and mermaid:
        raise click.UsageError("choose one of --json and --mermaid")
    description = describe_repository(repository)
    if as_json:
        click.echo(to_json(description))
    elif mermaid:
        click.echo(to_mermaid(description), nl=False)
    else:
        click.echo(to_text(description), nl=False)


COMMANDS = [inspect]
