"""Downloading a pinned wheel with the user's pip (index, proxy, credentials), checked by sha256.

tritonserver (``install``) and perf_analyzer (``perf_analyzer``) both come from PyPI wheels this way; a
first download of ~55 MB reports its bytes as pip reads them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from repogen.errors import RepogenError, ServerInstallError
from repogen.hashing import sha256_file

__all__ = ["PinnedWheel", "Report", "ServerInstallError", "download_wheel", "verify_sha256"]

Report = Callable[[int, int], None]
"""``report(bytes_done, bytes_total)`` during a download (total 0 when the index does not say)."""


def _error(message: str) -> RepogenError:
    return ServerInstallError(message)


class PinnedWheel(Protocol):
    """A wheel repogen downloads by exact name and verifies by sha256 (see ``Wheel``)."""

    @property
    def filename(self) -> str: ...

    @property
    def sha256(self) -> str: ...

    @property
    def requirement(self) -> str: ...


def download_wheel(wheel: PinnedWheel, what: str, wheels_dir: Path, report: Report | None = None) -> Path:
    """Fetch a pinned wheel with pip (honours the user's index/proxy config) and verify its sha256.

    ``report`` gets pip's byte counts as they come (``--progress-bar=raw``, pip 24.1 and later).
    """
    path = wheels_dir / wheel.filename
    if path.is_file() and sha256_file(path) == wheel.sha256:
        return path
    wheels_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels_dir, prefix=".download-") as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--no-input", "--only-binary=:all:",
            "--platform", wheel.filename.split("-")[-1].removesuffix(".whl"),
            "--disable-pip-version-check", "-d", tmp, wheel.requirement,
        ]  # fmt: skip
        hint = (
            "Check network access to your package index, or place the wheel "
            f"{wheel.filename} in {wheels_dir} by hand (e.g. `pip download --no-deps "
            f"{wheel.requirement} -d {wheels_dir}` on a connected machine)."
        )
        what = f"downloading {wheel.requirement} ({what})"
        if report is None or not _download_reporting(cmd, what, hint, report):
            _run(cmd, what, hint)
        downloaded = Path(tmp) / wheel.filename
        if not downloaded.is_file():
            found = ", ".join(p.name for p in Path(tmp).iterdir()) or "nothing"
            raise _error(
                f"pip downloaded {found}, expected {wheel.filename}. "
                "Your package index may serve a different build of the wheel; place the expected "
                f"file in {wheels_dir} by hand."
            )
        verify_sha256(downloaded, wheel)
        os.replace(downloaded, path)
    return path


_RAW_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)$")


def _download_reporting(cmd: list[str], what: str, hint: str, report: Report) -> bool:
    """``cmd`` with pip's raw progress lines passed to ``report``; False when this pip has no raw bar."""
    proc = subprocess.Popen(
        [*cmd, "--progress-bar=raw"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    )
    assert proc.stdout is not None
    tail: deque[str] = deque(maxlen=30)
    for line in proc.stdout:
        match = _RAW_PROGRESS.match(line.strip())
        if match:
            report(int(match[1]), int(match[2]))
        else:
            tail.append(line.rstrip())
    if proc.wait() == 0:
        return True
    if any("invalid choice: 'raw'" in line for line in tail):  # pip before 24.1
        return False
    raise _error(f"{what} failed (exit code {proc.returncode}): {' '.join(cmd)}\n" + "\n".join(tail) + f"\n{hint}")


def verify_sha256(path: Path, wheel: PinnedWheel) -> None:
    found = sha256_file(path)
    if found != wheel.sha256:
        raise _error(
            f"sha256 mismatch for {path.name}: expected {wheel.sha256}, found {found}. "
            "The package index served a different file than the one repogen pins; delete it and "
            "retry, and check your index/mirror if it persists."
        )


def _run(cmd: list[str], what: str, hint: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip().splitlines()[-30:]
        command = " ".join(cmd)
        raise _error(f"{what} failed (exit code {proc.returncode}): {command}\n" + "\n".join(output) + f"\n{hint}")
