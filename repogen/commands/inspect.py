"""``repogen inspect``."""

from __future__ import annotations

import click

from ..ondisk.describe import describe_repository, read_sbom, to_json, to_text
from ..ondisk.mermaid import to_mermaid


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (sorted keys, deterministic).")
@click.option("--mermaid", is_flag=True, help="A Mermaid flowchart of ensemble steps (and BLS calls).")
@click.option(
    "--sbom",
    is_flag=True,
    help="Print the repository's CycloneDX 1.6 SBOM (sbom.cdx.json): the models, and every distribution shipped "
    "per container Python with its wheel's sha256, license and dependencies.",
)
def inspect(repository: str, as_json: bool, mermaid: bool, sbom: bool) -> None:
    """Describe REPOSITORY: models, versions, tensors, batching, instances, ensemble steps."""
    if as_json + mermaid + sbom > 1:
        raise click.UsageError("choose one of --json, --mermaid and --sbom")
    if sbom:
        document, stored = read_sbom(repository)
        if not stored:
            click.echo(f"note: {repository} has no sbom.cdx.json (built before repogen wrote one); made from its "
                       "records now", err=True)  # fmt: skip
        click.echo(document.decode("utf-8"), nl=False)
        return
    description = describe_repository(repository)
    if as_json:
        click.echo(to_json(description))
    elif mermaid:
        click.echo(to_mermaid(description), nl=False)
    else:
        click.echo(to_text(description), nl=False)


COMMANDS = [inspect]
