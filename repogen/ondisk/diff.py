"""``repogen diff``: golden-file comparison of two repositories (expected, checked in; actual, just built).

Text files (config.pbtxt, model.py, model.json, the manifest) are shown as unified diffs, since a
reviewer reads those. Pickled payloads are reported by sha256 (the hash the manifest records)
with the model they belong to, followed by a diff of their disassembly (:func:`pickle_listing`).
``__pycache__`` directories, which the server writes next to model.py, are ignored, and so are signatures
(``model.sig``: their bytes differ at every signing); ``repogen diff`` says whether each side verifies.

Vendored third-party code (``<model>/<version>/cloudpickle/``) and the vendored runtime
(``<model>/<version>/repogen/``) are the same in every model, so golden copies usually leave them
out: a vendored file present on one side only is compared with the sha256 the other side's
manifest records for it, and reported only if that differs or is not recorded. ``exclude``
patterns (globs on the relative path; a pattern matching a directory covers what is under it)
take files out of the comparison, and out of ``--update``.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import os
import pickletools
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import RepositoryError
from ..runtime.contract import CONFIG_FILE, MANIFEST_FILE, is_version_name
from .integrity import is_signature
from .reader import files, read_manifest, sha256

BINARY_SUFFIXES = (".pkl", ".pickle")
PICKLE_SUFFIXES = (".pkl", ".pickle")
#: Directories of a version directory that hold vendored code rather than this build's output.
VENDORED = ("cloudpickle", "repogen")

Kind = Literal["changed", "only_expected", "only_actual"]


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: Kind
    binary: bool = False
    diff: str = ""  # unified diff: of the text, or of a payload's disassembly
    expected_sha256: str = ""
    actual_sha256: str = ""
    recorded: bool = False  # one side lacks the file: its hash is the one that side's manifest records

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
        notes = [
            f"{n} {what}"
            for n, what in (
                (sum(c.binary for c in changed), "binary"),
                (sum(c.recorded for c in changed), "vendored, by hash"),
            )
            if n
        ]
        only_expected = sum(c.kind == "only_expected" for c in self.changes)
        only_actual = sum(c.kind == "only_actual" for c in self.changes)
        parts = [
            f"{len(changed)} file(s) differ" + (f" ({', '.join(notes)})" if notes else ""),
            f"{only_expected} only in {self.expected}",
            f"{only_actual} only in {self.actual}",
        ]
        models = f"; models affected: {', '.join(self.models)}" if self.models else ""
        payloads = sorted({c.model for c in changed if c.binary and c.model and c.path.endswith(PICKLE_SUFFIXES)})
        payload_note = f"; payloads differ: {', '.join(payloads)}" if payloads else ""
        return f"repositories differ: {', '.join(parts)}{models}{payload_note}"

    def render(self, max_lines_per_file: int | None = None, summary: bool = True) -> str:
        """Every change, then the summary; long diffs are cut at ``max_lines_per_file``."""
        blocks = []
        for change in self.changes:
            if change.kind == "only_expected":
                blocks.append(f"only in {self.expected}: {change.path}")
            elif change.kind == "only_actual":
                blocks.append(f"only in {self.actual}: {change.path}")
            elif change.recorded:
                blocks.append(
                    f"vendored file differs: {change.path}: sha256 {change.expected_sha256} in {self.expected}, "
                    f"{change.actual_sha256} in {self.actual} (one side leaves the file out; its manifest records "
                    "the hash)"
                )
            elif change.binary:
                what = "payload" if change.path.endswith(PICKLE_SUFFIXES) else "file"  # model.onnx, model.plan, ...
                owner = f" (model {change.model}'s {what})" if change.model else ""
                blocks.append(
                    f"binary file differs: {change.path}{owner}: sha256 {change.expected_sha256} "
                    f"in {self.expected}, {change.actual_sha256} in {self.actual}"
                )
            if change.diff:
                blocks.append(_cut(change.diff, max_lines_per_file))
        if summary:
            blocks.append(self.summary())
        return "\n".join(blocks) + "\n" if blocks else ""


def _cut(diff: str, max_lines: int | None) -> str:
    lines = diff.splitlines()
    if max_lines is not None and len(lines) > max_lines:
        cut = len(lines) - max_lines
        lines = [*lines[:max_lines], f"... ({cut} more line(s) of this diff)"]
    return "\n".join(lines)


def _is_binary(path: str, data: bytes) -> bool:
    if path.endswith(BINARY_SUFFIXES) or b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _unified(path: str, expected: Path, actual: Path, old: Sequence[str], new: Sequence[str]) -> str:
    """A unified diff of two sequences of lines, headed by the file's path on each side."""
    return "\n".join(
        difflib.unified_diff(old, new, fromfile=f"{expected}/{path}", tofile=f"{actual}/{path}", lineterm="")
    )


def _text_diff(path: str, expected: Path, actual: Path, old: bytes, new: bytes) -> str:
    text = _unified(path, expected, actual, old.decode("utf-8").splitlines(), new.decode("utf-8").splitlines())
    # Only line endings or the final newline differ: splitlines() hid it, so say so.
    return text or f"--- {expected}/{path}\n+++ {actual}/{path}\n(whitespace at line ends or end of file differs)"


def _pickle_diff(path: str, expected: Path, actual: Path, old: bytes, new: bytes) -> str:
    text = _unified(path, expected, actual, pickle_listing(old), pickle_listing(new))
    return text or "(the disassembly is the same: the bytes differ outside the pickle's opcodes or in framing)"


# -- exclusions and vendored files ----------------------------------------------------------------


def excluded(path: str, patterns: Iterable[str]) -> bool:
    """Whether a pattern matches ``path`` or a directory above it.

    Globs on the relative POSIX path: a pattern with a ``/`` is anchored at the repository root,
    ``*`` and ``?`` stay within one path component and ``**`` spans any number of them
    (``*/1/files``, ``AddSub/**/*.py``); a pattern without ``/`` matches a file or directory name
    at any depth (``cloudpickle``, ``*.pkl``), as in ``.gitignore``.
    """
    parts = path.split("/")
    for pattern in patterns:
        steps = [step for step in pattern.strip("/").split("/") if step]
        if len(steps) == 1 and steps[0] != "**":
            if any(fnmatch.fnmatchcase(part, steps[0]) for part in parts):
                return True
        elif steps and _prefix_matches(steps, parts):
            return True
    return False


def _prefix_matches(steps: list[str], parts: list[str]) -> bool:
    """``steps`` (glob components, ``**`` for any number) match ``parts`` or a leading part of it."""
    if not steps:
        return True  # the pattern matched a directory above the rest of the path
    if steps[0] == "**":
        return any(_prefix_matches(steps[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], steps[0]) and _prefix_matches(steps[1:], parts[1:])


def vendored(path: str) -> bool:
    """``<model>/<version>/cloudpickle/...`` or ``<model>/<version>/repogen/...``."""
    parts = path.split("/")
    return len(parts) >= 4 and is_version_name(parts[1]) and parts[2] in VENDORED


def _recorded_hashes(repository: Path) -> dict[str, str]:
    """The manifest's sha256 of every file it lists; empty when there is no readable manifest."""
    try:
        manifest = read_manifest(repository) or {}
    except RepositoryError:
        return {}
    recorded = manifest.get("files")
    return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}


def diff_repositories(expected: str | Path, actual: str | Path, *, exclude: Sequence[str] = ()) -> RepositoryDiff:
    """Compare two repositories file by file (paths sorted, so the report is stable)."""
    expected, actual = Path(expected), Path(actual)
    for side in (expected, actual):
        if not side.is_dir():
            raise FileNotFoundError(f"{side} is not a directory; expected a model repository")
    old_files = {p: f for p, f in files(expected).items() if not excluded(p, exclude) and not is_signature(p)}
    new_files = {p: f for p, f in files(actual).items() if not excluded(p, exclude) and not is_signature(p)}
    old_recorded, new_recorded = _recorded_hashes(expected), _recorded_hashes(actual)
    changes = []
    for path in sorted(old_files.keys() | new_files.keys()):
        if path not in new_files or path not in old_files:
            present, recorded = (old_files, new_recorded) if path not in new_files else (new_files, old_recorded)
            kind: Kind = "only_expected" if path not in new_files else "only_actual"
            if not vendored(path) or path not in recorded:
                changes.append(FileChange(path, kind))
                continue
            found = sha256(present[path])
            if found != recorded[path]:
                old_hash, new_hash = (found, recorded[path]) if kind == "only_expected" else (recorded[path], found)
                changes.append(
                    FileChange(path, "changed", expected_sha256=old_hash, actual_sha256=new_hash, recorded=True)
                )
            continue
        old, new = old_files[path].read_bytes(), new_files[path].read_bytes()
        if old == new:
            continue
        if _is_binary(path, old) or _is_binary(path, new):
            listing = _pickle_diff(path, expected, actual, old, new) if path.endswith(PICKLE_SUFFIXES) else ""
            changes.append(
                FileChange(
                    path,
                    "changed",
                    binary=True,
                    diff=listing,
                    expected_sha256=sha256(old_files[path]),
                    actual_sha256=sha256(new_files[path]),
                )
            )
        else:
            changes.append(FileChange(path, "changed", diff=_text_diff(path, expected, actual, old, new)))
    return RepositoryDiff(expected, actual, tuple(changes))


# -- reading pickles ------------------------------------------------------------------------------

_LONG = 96  # characters of a str/bytes argument shown before it is abbreviated with its sha256
_MEMO_PUTS = ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT")
_MEMO_GETS = ("GET", "BINGET", "LONG_BINGET")


def _show(value: Any) -> str:
    if isinstance(value, (str, bytes)) and len(value) > _LONG:
        digest = hashlib.sha256(value if isinstance(value, bytes) else value.encode("utf-8")).hexdigest()[:16]
        kind = "bytes" if isinstance(value, bytes) else "chars"
        return f"{value[: _LONG // 2]!r}... ({len(value)} {kind}, sha256 {digest}...)"
    return repr(value)


def _opcodes(data: bytes) -> tuple[list[tuple[Any, Any]], str]:
    """The opcodes and their arguments, as far as they can be read, and the error that stopped reading."""
    ops: list[tuple[Any, Any]] = []
    try:
        for op, arg, _ in pickletools.genops(data):
            ops.append((op, arg))
    except Exception as exc:  # noqa: BLE001 - ValueError, EOFError, ...: show what was read
        return ops, f"{type(exc).__name__}: {exc}"
    return ops, ""


def pickle_listing(data: bytes) -> list[str]:
    """A pickle's opcodes, one per line, indented by MARK depth, without byte offsets or framing.

    Memo references name what they point at (a string's value, a global's dotted name, or
    ``obj#N`` counted over memoized objects), so an insertion shifts no other line; long strings
    and byte blobs (numpy arrays) are abbreviated with their sha256. Unreadable data ends the
    listing with the error.
    """
    ops, error = _opcodes(data)
    memo: dict[Any, tuple[str, Any]] = {}  # memo key -> (how a reference is shown, the plain value)
    recent: list[Any] = []  # plain values pushed last: STACK_GLOBAL's module and name
    objects = depth = 0
    lines: list[str] = []
    for index, (op, arg) in enumerate(ops):
        if op.name == "FRAME":
            continue
        if pickletools.markobject in op.stack_before:
            depth = max(depth - 1, 0)
        indent = "  " * depth
        if op.name == "MARK":
            depth += 1
        if op.name in _MEMO_PUTS:
            key = len(memo) if op.name == "MEMOIZE" else arg
            previous, value = ops[index - 1] if index else (op, None)
            if previous.name == "STACK_GLOBAL" and len(recent) >= 2:
                memo[key] = (f"global {recent[-2]}.{recent[-1]}", None)
            elif previous.name == "GLOBAL":
                memo[key] = (f"global {str(value).replace(' ', '.')}", None)
            elif value is not None and previous.name not in _MEMO_GETS:
                memo[key] = (_show(value), value)
            else:
                objects += 1
                memo[key] = (f"obj#{objects}", None)
                lines.append(f"{indent}{op.name} obj#{objects}")
            continue
        if op.name in _MEMO_GETS:
            shown, value = memo.get(arg, (f"memo[{arg}]?", None))
            if value is not None:
                recent.append(value)
            lines.append(f"{indent}{op.name} {shown}")
            continue
        if arg is not None:
            recent.append(arg)
        lines.append(f"{indent}{op.name}" if arg is None else f"{indent}{op.name} {_show(arg)}")
    if error:
        lines.append(f"(cannot read further: {error})")
    return lines


# -- accepting the new output ---------------------------------------------------------------------


def _looks_like_repository(path: Path) -> bool:
    return (path / MANIFEST_FILE).is_file() or any(path.glob(f"*/{CONFIG_FILE}"))


def _left_out(expected: Path) -> set[str]:
    """Vendored directories (``cloudpickle``, ``repogen``) that ``expected`` holds for no model."""
    if not expected.is_dir():
        return set()
    present = {path.split("/")[2] for path in files(expected) if vendored(path)}
    return set(VENDORED) - present if any(expected.glob(f"*/{CONFIG_FILE}")) else set()


def update_expected(expected: str | Path, actual: str | Path, *, exclude: Sequence[str] = ()) -> None:
    """Make ``expected`` a copy of ``actual`` (without ``__pycache__``), swapped in at the end.

    What ``expected`` leaves out stays out: files matching ``exclude`` keep their expected version
    (or stay absent), and vendored directories that ``expected`` holds for no model are not
    copied (the manifest still records their hashes). Refuses to replace a non-empty directory
    that does not look like a model repository, so a mistyped argument (``repogen diff .
    build/repo --update``) cannot wipe a project.
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
            f"(no {MANIFEST_FILE}, no */{CONFIG_FILE}); check the argument order (EXPECTED ACTUAL), or remove it first"
        )
    left_out = _left_out(expected)
    chosen = {
        path: source
        for path, source in files(actual).items()
        if not excluded(path, exclude)
        and not is_signature(path)
        and not (vendored(path) and path.split("/")[2] in left_out)
    }
    if expected.is_dir():
        chosen.update({path: source for path, source in files(expected).items() if excluded(path, exclude)})
    expected.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{expected.name}.golden-", dir=expected.parent))
    try:
        target = staging / "new"
        target.mkdir()
        for path, source in chosen.items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / path)
        os.chmod(target, 0o755)
        if expected.exists():
            os.rename(expected, staging / "old")
        os.rename(target, expected)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
