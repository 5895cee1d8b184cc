"""Writing a file map to disk atomically, one build at a time per output directory.

The new repository is written into a hidden directory beside the output and swapped into place
with ``renameat2(RENAME_EXCHANGE)``, so a reader (or a build killed at any moment) sees either
the old repository or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from filelock import FileLock

from ..errors import BuildError
from .files import MANIFEST

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


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


def _unlisted_files(output: Path) -> list[str]:
    """Files in an existing output that its manifest does not list: the user's, not ours."""
    manifest = output / MANIFEST
    if not manifest.is_file():
        return sorted(str(p.relative_to(output)) for p in output.rglob("*") if p.is_file())[:10]
    listed = set(json.loads(manifest.read_text(encoding="utf-8")).get("files", {})) | {MANIFEST}
    found = (p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    return sorted(p for p in found if p not in listed and "__pycache__" not in p)[:10]


def _lock_path(output: Path) -> Path:
    """Locks live in the temp directory, keyed by the output's path, so the user's tree stays clean."""
    locks = Path(tempfile.gettempdir()) / "repogen-locks"
    locks.mkdir(exist_ok=True)
    return locks / (hashlib.sha256(str(output).encode()).hexdigest()[:32] + ".lock")


def write_repository(files: dict[str, bytes], output: Path, force: bool = False) -> None:
    output = output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(_lock_path(output))):
        if output.exists():
            if not output.is_dir():
                raise BuildError(f"output {output} exists and is not a directory; choose another -o path")
            unlisted = _unlisted_files(output)
            if unlisted and not force:
                raise BuildError(
                    f"refusing to replace {output}: it holds files repogen did not write ({', '.join(unlisted)}); "
                    "choose another output directory, move those files, or pass --force to replace it all"
                )
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.repogen-", dir=output.parent))
        try:
            for relative, data in files.items():
                path = staging / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            os.chmod(staging, 0o755)
            if not output.exists():
                os.rename(staging, output)
            elif _exchange(staging, output):
                pass  # `staging` now holds the previous repository
            else:
                old = staging.with_name(staging.name + "-old")
                os.rename(output, old)
                os.rename(staging, output)
                staging = old
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(staging)
