"""What ``repogen diff`` does, as one call: compare a golden repository with a build, or accept the build.

:func:`compare` returns the text the command prints and, when the comparison fails, the one-line reason (the
command exits 1 with it). Each side's signatures are reported, and checked with a public key when given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .diff import diff_repositories, update_expected

__all__ = ["DiffOutcome", "compare"]


@dataclass(frozen=True)
class DiffOutcome:
    text: str
    """What to print, newlines included."""
    failure: str | None = None
    """Why the comparison fails (exit 1), or None."""


def compare(
    expected: str | Path,
    actual: str | Path,
    exclude: Sequence[str] = (),
    update: bool = False,
    verify_key: Path | None = None,
) -> DiffOutcome:
    """``actual`` against the golden ``expected``; with ``update``, ``expected`` rewritten as a copy of it."""
    if update:
        return _update(str(expected), str(actual), exclude)
    try:
        result = diff_repositories(expected, actual, exclude=exclude)
    except FileNotFoundError as exc:
        return DiffOutcome("", str(exc))
    if result.clean:
        lines, trusted = _signatures(expected, actual, verify_key)
        failure = None if trusted else "a side does not verify against --verify-key"
        return DiffOutcome(result.summary() + "\n" + lines, failure)
    lines, _ = _signatures(expected, actual, verify_key)
    return DiffOutcome(
        result.render(summary=False) + lines, f"{result.summary()}; if ACTUAL is right, rerun with --update"
    )


def _signatures(expected: str | Path, actual: str | Path, key: Path | None) -> tuple[str, bool]:
    """A line per side saying whether it is signed (and, with ``key``, verifies), and whether both are trusted."""
    from ..signing.oms import VerifyWith
    from ..signing.repository_signatures import is_signed, signature_status

    sides = {"EXPECTED": Path(expected), "ACTUAL": Path(actual)}
    if key is None and not any(is_signed(path) for path in sides.values()):
        return "", True
    method = VerifyWith(key=key) if key is not None else None
    lines, trusted = [], True
    for label, path in sides.items():
        status, ok = signature_status(path, method)
        lines.append(f"{label} {path}: {status}\n")
        trusted = trusted and ok
    return "".join(lines), trusted


def _update(expected: str, actual: str, exclude: Sequence[str]) -> DiffOutcome:
    before = diff_repositories(expected, actual, exclude=exclude) if Path(expected).is_dir() else None
    if before is not None and before.clean:
        return DiffOutcome(f"{expected} already matches {actual}; nothing to update\n")
    try:
        update_expected(expected, actual, exclude=exclude)
    except (OSError, ValueError) as exc:
        return DiffOutcome("", str(exc))
    change = f" ({before.summary()})" if before is not None else " (created)"
    return DiffOutcome(f"Updated {expected} from {actual}{change}\n")
