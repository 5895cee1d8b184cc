"""Copying a user's file into a staging repository without reading it into this process.

A reflink (``FICLONE``: btrfs, XFS, overlayfs on those) shares the blocks until either side changes; elsewhere
the kernel copies the data regions (``copy_file_range``), holes stay holes. Never a hard link: the repository
would then change whenever the user edits the file in place, under a manifest that records the old digest.
"""

from __future__ import annotations

import errno
import fcntl
import os

from ..errors import BuildError
from ..hashing import FileCopy

_FICLONE = 0x40049409  # _IOW(0x94, 9, int), linux/fs.h
_NOT_HERE = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.ETXTBSY, errno.EPERM}
_STEP = 1 << 30


def copy_in(entry: FileCopy, target: str) -> None:
    """``entry.source`` to ``target`` (a new file); refused when the source changed since the build hashed it."""
    with open(entry.source, "rb") as source, open(target, "wb") as destination:
        if not _reflink(source.fileno(), destination.fileno()):
            _copy_regions(source.fileno(), destination.fileno(), os.fstat(source.fileno()).st_size)
    if entry.changed():
        raise BuildError(
            f"{entry.source} changed while the build ran (it was hashed as {entry.size} bytes, sha256 "
            f"{entry.sha256[:12]}...); the previous repository is untouched. Build again once it is written"
        )


def _reflink(source: int, destination: int) -> bool:
    try:
        fcntl.ioctl(destination, _FICLONE, source)
    except OSError:
        return False
    return True


def _copy_regions(source: int, destination: int, size: int) -> None:
    """The data regions of ``source`` (all of it where the file system cannot say), in the kernel; holes kept."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(source, offset, os.SEEK_DATA)
            end = os.lseek(source, start, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after offset: the rest is a hole
                break
            start, end = offset, size
        _copy_range(source, destination, start, min(end, size) - start)
        offset = end
    os.ftruncate(destination, size)


def _copy_range(source: int, destination: int, start: int, length: int) -> None:
    done = 0
    while done < length:
        try:
            copied = os.copy_file_range(source, destination, min(_STEP, length - done), start + done, start + done)
        except OSError as exc:
            if exc.errno not in _NOT_HERE:
                raise
            copied = _copy_chunk(source, destination, start + done, min(1 << 20, length - done))
        if copied == 0:
            raise OSError(errno.EIO, "the source ended before its size", str(source))
        done += copied


def _copy_chunk(source: int, destination: int, offset: int, length: int) -> int:
    """Where the kernel cannot copy between these files: 1 MiB through this process."""
    data = os.pread(source, length, offset)
    os.pwrite(destination, data, offset)
    return len(data)
