"""``repogen validate``."""

from __future__ import annotations

import click

from ..ondisk.validate import validate_repository
from ..triton.fields import TARGET_RELEASE
from ..triton.releases import Release, get_release
from .params import RELEASE_HELP, TritonRelease


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--triton-version",
    "--release",
    "release",
    type=TritonRelease(),
    default=TARGET_RELEASE,
    show_default=True,
    help=f"Oldest Triton release that must load the repository: {RELEASE_HELP}. Configs are read with the "
    f"r{TARGET_RELEASE} schema, so for a newer release no field of it is too new.",
)
def validate(repository: str, release: Release) -> None:
    """Check REPOSITORY statically: configs parse, names, versions, ensembles, manifest hashes."""
    problems = validate_repository(repository, release=release)
    for problem in problems:
        click.echo(f"{'Warning' if problem.warning else 'Error'}: {problem}", err=True)
    if any(not p.warning for p in problems):
        raise SystemExit(1)
    schema = "" if release.version <= get_release(TARGET_RELEASE).version else f" with the r{TARGET_RELEASE} schema"
    click.echo(f"OK: {repository} has no problems (checked against Triton {release.ngc}{schema})")


COMMANDS = [validate]
