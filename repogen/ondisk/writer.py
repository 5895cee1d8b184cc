"""Writing a file map to disk atomically, one build at a time per output directory.

The new repository is written into a hidden staging directory beside the output and swapped into
place with ``renameat2(RENAME_EXCHANGE)``, so a reader (or a build killed at any moment) sees either
the old repository or the new one, never a mix. A lock on the output's parent directory (``flock``
of the directory itself, so no lock file is created or left behind) serializes builds into it
(:func:`locked`), and everything that reads the previous repository (the "files we did not write"
check, the plan of a ``--model-version`` merge, which the build makes there) happens under that lock, so
concurrent builds cannot lose each other's work. The writer writes the plan it is given: it knows
nothing of how a repository is compiled.

A build killed between creating its staging directory and removing it leaves that directory behind;
the next build into the same output removes it. Only names this module creates are ever removed:
``.<output name>.repogen-<8 random characters>`` with an optional ``-old`` suffix.

Modes are written, not left to the umask: every file 0644 (0755 where the file it carries is
executable), every directory 0755. The server that loads a repository is rarely its builder: NGC's
images and KServe's runtime run as uid 1000, and a build under ``umask 077`` (hardened CI runners,
root shells) that kept its modes would load for its builder and fail in the container. A carried file
others cannot read is copied with readable modes, never chmod-ed where it lives (it may be the user's).

A file-system failure (a full disk, a read-only or forbidden directory, an output that is a mount
point) becomes one :class:`BuildError` naming the path, the cause and the fix; it always happens
before the swap, so the message can say that the previous repository is untouched.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import fcntl
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import BuildError
from ..hashing import Files
from ..runtime.contract import MANIFEST_FILE
from .copying import copy_in
from .integrity import unlisted_files

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_STAGING_INFIX = ".repogen-"
FILE_MODE, EXECUTABLE_MODE, DIRECTORY_MODE = 0o644, 0o755, 0o755
"""What every file, executable file and directory of a repository gets, whatever the umask."""
_TRACE_ENV = "REPOGEN_WRITER_TRACE"  # tests: print each phase to stderr
_PAUSE_ENV = "REPOGEN_WRITER_PAUSE"  # tests: "phase[,phase...]" sleeps there, so a kill lands exactly


@dataclasses.dataclass(frozen=True)
class WritePlan:
    """What the staging directory receives: the build's entries (bytes, or a user's file to copy, see
    ``hashing.FileCopy``), plus existing files carried over unchanged."""

    files: Files
    carried: dict[str, Path | str] = dataclasses.field(default_factory=dict)  # relative path -> file to link or copy


#: Called with the complete staged repository (named as the output) just before it is swapped in: signing.
Finish = Callable[[Path], None]


def checkpoint(phase: str) -> None:
    """A named point in the write, observable by tests: traced, and optionally paused at.

    The SIGKILL tests use it to land kills inside windows that are microseconds wide (the exchange).
    """
    if os.environ.get(_TRACE_ENV):
        print(f"repogen-writer: {phase}", file=sys.stderr, flush=True)
    if phase in os.environ.get(_PAUSE_ENV, "").split(","):
        time.sleep(60)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False where the platform cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a))


@contextlib.contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """Hold ``flock`` on the directory itself: released when the process ends however it ends."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def staging_pattern(output: Path) -> re.Pattern[str]:
    """Exactly the names ``tempfile.mkdtemp`` gives our staging directories (and their ``-old`` twins)."""
    return re.compile(re.escape(f".{output.name}{_STAGING_INFIX}") + r"[a-z0-9_]{8}(-old)?")


def remove_stale_staging(output: Path) -> list[Path]:
    """Remove staging directories left by killed builds of ``output``; call only under the lock.

    Under the lock no other build of this output is running, so every matching directory is dead.
    Symlinks and files are never followed or removed, whatever their name.
    """
    pattern = staging_pattern(output)
    removed = []
    for entry in output.parent.iterdir():
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _check_existing(output: Path, force: bool) -> None:
    if not output.is_dir():
        raise BuildError(f"output {output} exists and is not a directory; choose another -o path")
    unlisted = unlisted_files(output)
    if unlisted and not force:
        shown = ", ".join(unlisted[:10]) + (f" and {len(unlisted) - 10} more" if len(unlisted) > 10 else "")
        raise BuildError(
            f"refusing to replace {output}: it holds files repogen did not write ({shown}); "
            "choose another output directory, move those files, or pass --force to replace it all"
        )


def _readable_mode(mode: int) -> int:
    return EXECUTABLE_MODE if mode & 0o111 else FILE_MODE


def _carry(source: Path | str, destination: Path | str) -> None:
    """Hard-link an existing file (same bytes, same inode: untouched), copying where links fail.

    A file that not everyone may read is copied instead, with :data:`FILE_MODE` (or the executable mode).
    """
    mode = os.stat(source, follow_symlinks=False).st_mode
    if mode & 0o444 != 0o444:
        shutil.copyfile(source, destination, follow_symlinks=False)
        os.chmod(destination, _readable_mode(mode))
        return
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, destination, follow_symlinks=False)
        os.chmod(destination, _readable_mode(mode))


def _write_file(path: Path, data: bytes) -> None:
    """``data`` at ``path`` with mode :data:`FILE_MODE`, whatever the umask made of it."""
    path.write_bytes(data)
    os.chmod(path, FILE_MODE)


def _fill(staging: Path, plan: WritePlan) -> None:
    half = len(plan.files) // 2
    copied: dict[Path, Path] = {}  # a user's file copied once: later paths link to that copy
    for index, (relative, entry) in enumerate(plan.files.items()):
        if index == half:
            checkpoint("writing")
        path = staging / relative
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(entry, bytes):
                _write_file(path, entry)
            elif entry.source in copied:
                os.link(copied[entry.source], path)
            else:
                copy_in(entry, str(path))
                os.chmod(path, FILE_MODE)  # a copy of the user's file, readable whatever the umask or its mode
                copied[entry.source] = path
        except OSError as exc:  # write() names no file: say which one did not fit
            raise OSError(exc.errno, exc.strerror, exc.filename or str(path)) from exc
    staged: dict[Path | str, str] = {}  # a source copied (not linked) once: later paths link to that copy
    made: set[str] = set()
    for relative, source in plan.carried.items():
        target = os.path.join(staging, relative)
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        first = staged.get(source)
        if first is not None:
            os.link(first, target)
            continue
        _carry(source, target)
        staged[source] = target
    for directory, _, _ in os.walk(staging):  # made under the umask, and mkdtemp made the staging one 0700
        os.chmod(directory, DIRECTORY_MODE)


def _swap_in(staging: Path, output: Path) -> Path | None:
    """Put ``staging`` at ``output``; return the directory now holding the previous repository, if any."""
    checkpoint("exchange")
    if not output.exists():
        os.rename(staging, output)
        return None
    if _exchange(staging, output):
        return staging
    old = staging.with_name(staging.name + "-old")  # no renameat2: a short window without an output
    os.rename(output, old)
    try:
        os.rename(staging, output)
    except OSError:
        os.rename(old, output)  # put the previous repository back before reporting the failure
        raise
    return old


_FIXES = {
    errno.ENOSPC: "free space there: until it replaces the output, a build needs room for a second complete copy",
    errno.EDQUOT: "free space within your quota: until it replaces the output, a build needs room for a second copy",
    errno.EROFS: "build onto a writable file system and copy the result, or mount it read-write",
    errno.EACCES: "build as a user that may write there, or choose another -o (a build is written beside the output, "
    "in its parent directory, then renamed into place)",
}
_FIXES[errno.EPERM] = _FIXES[errno.EACCES]


def _mount_point_error(output: Path, previous: str) -> BuildError:
    return BuildError(
        f"cannot replace {output}: it is a mount point, another file system than its parent {output.parent}; a build "
        f"is written beside the output and renamed into place, which cannot cross file systems. Build into a "
        f"directory inside it (-o {output / 'models'}) and serve that one. {previous}"
    )


def _file_system_error(exc: OSError, output: Path, previous: str) -> BuildError:
    """One line for the CLI: the path, the cause, the fix, and what became of the previous repository."""
    if exc.errno in (errno.EXDEV, errno.EBUSY):
        return _mount_point_error(output, previous)
    path = exc.filename or output
    cause = exc.strerror or str(exc)
    fix = _FIXES.get(exc.errno or 0, "fix that and build again")
    return BuildError(f"cannot write the repository {output}: {path}: {cause} (errno {exc.errno}); {fix}. {previous}")


def write_repository(
    files: Files,
    output: Path,
    force: bool = False,
    links: dict[str, str] | None = None,
    finish: Finish | None = None,
) -> None:
    """Replace ``output`` with ``files`` atomically.

    Generated files are written from their bytes, a user's files (``FileCopy``) copied (see ``copying``).

    ``links`` (repository path -> file) are hard-linked in (copied once where links cannot cross file
    systems): the shipped packages, whose files live in the wheel cache. ``finish`` runs on the complete
    staged repository before the swap (a failure there leaves the previous repository in place).
    """
    with locked(output, force) as target:
        target.write(WritePlan(files, dict(links or {})), finish)


@contextlib.contextmanager
def locked(output: Path, force: bool = False) -> Iterator[LockedOutput]:
    """``output`` held for one build: nobody else writes it until the block ends, so what the build reads
    there (the versions a ``--model-version`` merge keeps) is still there when it writes.

    An output holding files repogen did not write is refused unless ``force``. A file-system failure inside
    the block becomes one :class:`BuildError` naming the path, the cause and the fix.
    """
    output = output.resolve()
    if (output / MANIFEST_FILE).is_file():
        previous = f"The previous repository at {output} is intact."
    else:
        previous = f"{output} is unchanged." if output.exists() else f"Nothing was written to {output}."
    if output.is_dir() and os.path.ismount(output):
        raise _mount_point_error(output, previous)  # refused before writing a whole copy that cannot move
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with _directory_lock(output.parent):
            checkpoint("locked")
            remove_stale_staging(output)
            if output.exists():
                _check_existing(output, force)
            yield LockedOutput(output)
    except OSError as exc:
        raise _file_system_error(exc, output, previous) from exc


@dataclasses.dataclass(frozen=True)
class LockedOutput:
    """The output of a build, under its lock (:func:`locked`)."""

    path: Path

    def write(self, plan: WritePlan, finish: Finish | None = None) -> None:
        """Stage ``plan`` beside the output, run ``finish`` on it, and swap it in."""
        staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}{_STAGING_INFIX}", dir=self.path.parent))
        # The repository is staged under the output's own name, so that what reads a directory's name (a
        # signature's subject) sees the name it will have.
        staged = staging / self.path.name
        staged.mkdir()
        leftover: Path | None = None
        try:
            _fill(staged, plan)
            if finish is not None:
                finish(staged)
            leftover = _swap_in(staged, self.path)
            checkpoint("exchanged")
        finally:
            if leftover is not None:
                shutil.rmtree(leftover, ignore_errors=True)
            shutil.rmtree(staging, ignore_errors=True)
        checkpoint("done")
