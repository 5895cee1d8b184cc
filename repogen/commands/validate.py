"""``repogen validate``."""

from __future__ import annotations

import click

from ..built.validate import validate_repository
from ..triton import fields as releases

#: Releases a repository can be checked against: our schema cannot parse fields newer than the target.
_RELEASES = sorted(r for r in releases.SERVER_VERSIONS if r <= releases.TARGET_RELEASE)  # "yy.mm" sorts as text


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--release",
    type=click.Choice(_RELEASES),
    default=releases.TARGET_RELEASE,
    show_default=True,
    help="Oldest Triton release (NGC yy.mm) that must load the repository.",
)
def validate(repository: str, release: str) -> None:
    """Check REPOSITORY statically: configs parse, names, versions, ensembles, manifest hashes."""
    problems = validate_repository(repository, release=release)
    for problem in problems:
        click.echo(f"Error: {problem}", err=True)
    if problems:
        raise SystemExit(1)
    click.echo(f"OK: {repository} has no problems (checked against Triton {release})")


COMMANDS = [validate]
