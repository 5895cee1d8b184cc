"""``repogen diff``: golden-file comparison of two repositories (expected, checked in; actual, just built).

Text files (config.pbtxt, model.py, model.json, the manifest, the vendored runtime) are shown as
unified diffs, since a reviewer reads those. Binary files (pickled payloads) cannot be read, so
they are reported by sha256 (the hash the manifest records) together with the model they belong
to. ``__pycache__`` directories, which the server writes next to model.py, are ignored.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..triton.layout import MANIFEST
from .repository import CONFIG, files, sha256

BINARY_SUFFIXES = (".pkl", ".pickle")

Kind = Literal["changed", "only_expected", "only_actual"]


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: Kind
    binary: bool = False
    diff: str = ""  # unified diff, for changed text files
    expected_sha256: str = ""
    actual_sha256: str = ""

    @property
    def model(self) -> str | None:
        """The model directory the file belongs to; None for files at the repository root."""
        return self.path.split("/", 1)[0] if "/" in self.path else None


@dataclass(frozen=True)
class RepositoryDiff:
    expected: Path
    actual: Path
    changes: tuple[FileChange, ...]

    @property
    def clean(self) -> bool:
        return not self.changes

    @property
    def models(self) -> list[str]:
        return sorted({c.model for c in self.changes if c.model})

    def summary(self) -> str:
        if self.clean:
            return f"{self.expected} and {self.actual} are identical"
        changed = [c for c in self.changes if c.kind == "changed"]
        binary = sum(c.binary for c in changed)
        only_expected = sum(c.kind == "only_expected" for c in self.changes)
        only_actual = sum(c.kind == "only_actual" for c in self.changes)
        parts = [
            f"{len(changed)} file(s) differ" + (f" ({binary} binary)" if binary else ""),
            f"{only_expected} only in {self.expected}",
            f"{only_actual} only in {self.actual}",
        ]
        models = f"; models affected: {', '.join(self.models)}" if self.models else ""
        payloads = sorted({c.model for c in changed if c.binary and c.model})
        payload_note = f"; payloads differ: {', '.join(payloads)}" if payloads else ""
        return f"repositories differ: {', '.join(parts)}{models}{payload_note}"

    def render(self, max_lines_per_file: int | None = None, summary: bool = True) -> str:
        """Every change, then the summary; long text diffs are cut at ``max_lines_per_file``."""
        blocks = []
        for change in self.changes:
            if change.kind == "only_expected":
                blocks.append(f"only in {self.expected}: {change.path}")
            elif change.kind == "only_actual":
                blocks.append(f"only in {self.actual}: {change.path}")
            elif change.binary:
                owner = f" (model {change.model}'s payload)" if change.model else ""
                blocks.append(
                    f"binary file differs: {change.path}{owner}: sha256 {change.expected_sha256} "
                    f"in {self.expected}, {change.actual_sha256} in {self.actual}"
                )
            else:
                lines = change.diff.splitlines()
                if max_lines_per_file is not None and len(lines) > max_lines_per_file:
                    cut = len(lines) - max_lines_per_file
                    lines = [*lines[:max_lines_per_file], f"... ({cut} more line(s) of this diff)"]
                blocks.append("\n".join(lines))
        if summary:
            blocks.append(self.summary())
        return "\n".join(blocks) + "\n" if blocks else ""


def _is_binary(path: str, data: bytes) -> bool:
    if path.endswith(BINARY_SUFFIXES) or b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _unified(path: str, expected: Path, actual: Path, old: bytes, new: bytes) -> str:
    lines = difflib.unified_diff(
        old.decode("utf-8").splitlines(),
        new.decode("utf-8").splitlines(),
        fromfile=f"{expected}/{path}",
        tofile=f"{actual}/{path}",
        lineterm="",
    )
    text = "\n".join(lines)
    # Only line endings or the final newline differ: splitlines() hid it, so say so.
    return text or f"--- {expected}/{path}\n+++ {actual}/{path}\n(whitespace at line ends or end of file differs)"


def diff_repositories(expected: str | Path, actual: str | Path) -> RepositoryDiff:
    """Compare two repositories file by file (paths sorted, so the report is stable)."""
    expected, actual = Path(expected), Path(actual)
    for side in (expected, actual):
        if not side.is_dir():
            raise FileNotFoundError(f"{side} is not a directory; expected a model repository")
    old_files, new_files = files(expected), files(actual)
    changes = []
    for path in sorted(old_files.keys() | new_files.keys()):
        if path not in new_files:
            changes.append(FileChange(path, "only_expected"))
        elif path not in old_files:
            changes.append(FileChange(path, "only_actual"))
        else:
            old, new = old_files[path].read_bytes(), new_files[path].read_bytes()
            if old == new:
                continue
            if _is_binary(path, old) or _is_binary(path, new):
                changes.append(
                    FileChange(
                        path,
                        "changed",
                        binary=True,
                        expected_sha256=sha256(old_files[path]),
                        actual_sha256=sha256(new_files[path]),
                    )
                )
            else:
                changes.append(FileChange(path, "changed", diff=_unified(path, expected, actual, old, new)))
    return RepositoryDiff(expected, actual, tuple(changes))


def _looks_like_repository(path: Path) -> bool:
    return (path / MANIFEST).is_file() or any(path.glob(f"*/{CONFIG}"))


def update_expected(expected: str | Path, actual: str | Path) -> None:
    """Make ``expected`` an exact copy of ``actual`` (without ``__pycache__``), swapped in at the end.

    Refuses to replace a non-empty directory that does not look like a model repository, so a
    mistyped argument (``repogen diff . build/repo --update``) cannot wipe a project.
    """
    expected, actual = Path(expected), Path(actual)
    if not actual.is_dir():
        raise FileNotFoundError(f"{actual} is not a directory; expected a model repository")
    old, new = expected.resolve(), actual.resolve()
    if old == new or old in new.parents or new in old.parents:
        raise ValueError(f"cannot update {expected} from {actual}: one contains the other")
    if expected.exists() and any(expected.iterdir()) and not _looks_like_repository(expected):
        raise ValueError(
            f"refusing to replace {expected}: it does not look like a model repository "
            f"(no {MANIFEST}, no */{CONFIG}); check the argument order (EXPECTED ACTUAL), or remove it first"
        )
    expected.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{expected.name}.golden-", dir=expected.parent))
    try:
        shutil.copytree(actual, staging / "new", ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(staging / "new", 0o755)
        if expected.exists():
            os.rename(expected, staging / "old")
        os.rename(staging / "new", expected)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
