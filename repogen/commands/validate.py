"""``repogen validate``."""

from __future__ import annotations

import click

from ..ondisk.reader import read_manifest, require_directory
from ..ondisk.validate import checked_releases, validate_repository
from ..triton.fields import SCHEMA_RELEASE
from ..triton.releases import Release
from .params import RELEASE_HELP, release_option


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False))
@release_option(
    "--release",
    help=f"The Triton release that must load the repository: {RELEASE_HELP}. Its container's Python, CUDA major, "
    "python_backend rules and config schema are checked. Default: every release the build recorded it serves "
    "(the newest release for a repository repogen did not build).",
)
@click.option(
    "--gpus",
    type=click.IntRange(min=0),
    help="The NVIDIA GPUs the server will have: a model whose KIND_GPU instances need more is an error (it would "
    "fail to load there). Default: not checked.",
)
def validate(repository: str, triton_release: Release | None, gpus: int | None) -> None:
    """Check REPOSITORY statically: configs parse, names, versions, ensembles, manifest hashes, target fit."""
    release = triton_release
    problems = validate_repository(repository, release=release, gpus=gpus)
    for problem in problems:
        click.echo(f"{'Warning' if problem.warning else 'Error'}: {problem}", err=True)
    if any(not p.warning for p in problems):
        raise SystemExit(1)
    releases = [release] if release else checked_releases(read_manifest(require_directory(repository)) or {})
    names = ", ".join(r.ngc for r in releases) or "no NGC container (a --pin-python build for another Python)"
    click.echo(f"OK: {repository} has no problems (checked against Triton {names}; config schema r{SCHEMA_RELEASE})")


COMMANDS = [validate]
