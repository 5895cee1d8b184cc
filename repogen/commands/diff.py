"""``repogen diff``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from ..ondisk.diff import diff_repositories, update_expected


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
    if update:
        _update(expected, actual, exclude)
        return
    try:
        result = diff_repositories(expected, actual, exclude=exclude)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    if result.clean:
        click.echo(result.summary())
        if not _signatures(expected, actual, verify_key):
            raise click.ClickException("a side does not verify against --verify-key")
        return
    click.echo(result.render(summary=False), nl=False)
    _signatures(expected, actual, verify_key)
    raise click.ClickException(f"{result.summary()}; if ACTUAL is right, rerun with --update")


def _signatures(expected: str, actual: str, key: Path | None) -> bool:
    """Say whether each side is signed (and, with ``key``, verifies); False when a side fails the key."""
    from ..signing.oms import VerifyWith
    from ..signing.repository_signatures import is_signed, signature_status

    sides = {"EXPECTED": Path(expected), "ACTUAL": Path(actual)}
    if key is None and not any(is_signed(path) for path in sides.values()):
        return True
    method = VerifyWith(key=key) if key is not None else None
    trusted = True
    for label, path in sides.items():
        status, ok = signature_status(path, method)
        click.echo(f"{label} {path}: {status}")
        trusted = trusted and ok
    return trusted


def _update(expected: str, actual: str, exclude: Sequence[str]) -> None:
    before = diff_repositories(expected, actual, exclude=exclude) if Path(expected).is_dir() else None
    if before is not None and before.clean:
        click.echo(f"{expected} already matches {actual}; nothing to update")
        return
    try:
        update_expected(expected, actual, exclude=exclude)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    change = f" ({before.summary()})" if before is not None else " (created)"
    click.echo(f"Updated {expected} from {actual}{change}")


COMMANDS = [diff]
