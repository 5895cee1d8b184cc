"""``repogen diff``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from ..ondisk.golden_diff import compare


@click.command()
@click.argument("expected", type=click.Path(file_okay=False))
@click.argument("actual", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="PATTERN",
    help="Leave paths out of the comparison and of --update (repeatable). A glob on the relative path: with a '/' "
    "it is anchored at the repository root ('*/1/files', '**' spans directories), without one it matches a file or "
    "directory name at any depth ('*.pkl').",
)
@click.option(
    "--update",
    is_flag=True,
    help="Rewrite EXPECTED as a copy of ACTUAL (accept the new output); what EXPECTED leaves out stays out.",
)
@click.option(
    "--verify-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Check each side's signatures against this public key (a side that does not verify fails the diff). "
    "Signature files themselves are never compared.",
)
def diff(expected: str, actual: str, exclude: Sequence[str], update: bool, verify_key: Path | None) -> None:
    """Compare the golden repository EXPECTED with ACTUAL; exit 1 on any difference.

    Text files are shown as unified diffs, payloads by sha256 and a diff of their disassembly.
    Vendored code (<model>/<version>/cloudpickle/ and repogen/) missing from one side is compared
    with the sha256 that side's manifest records, so goldens may leave it out. Signatures (model.sig)
    are left out; when a side has them, a line says whether it verifies.
    """
    outcome = compare(expected, actual, exclude, update, verify_key)
    click.echo(outcome.text, nl=False)
    if outcome.failure is not None:
        raise click.ClickException(outcome.failure)


COMMANDS = [diff]
