"""What a test needs of the machine, checked before the test relies on it.

A test skips only for what CI (``.ci/run``: root on a fresh Debian machine, with apt) cannot provide:
a capability the machine withholds, as an unprivileged container withholds ``CAP_SYS_ADMIN``. What CI
can provide (a tool apt installs) is a failure naming the fix, and once the prerequisite is there a
failure of the operation itself (``mount`` refusing an option) fails the test with its own error,
never a skip that reads every non-zero exit as "needs root".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

__all__ = ["CAP_SYS_ADMIN", "has_capability", "require_capability", "require_tool"]

CAP_SYS_ADMIN = 21
"""``mount``, ``umount`` and ``unshare --mount`` need it (capabilities(7))."""

_NAMES = {CAP_SYS_ADMIN: "CAP_SYS_ADMIN"}


def has_capability(capability: int, status: str | Path = "/proc/self/status") -> bool:
    """Whether this process's effective set holds ``capability`` (``CapEff`` of ``/proc/self/status``)."""
    for line in Path(status).read_text(encoding="utf-8").splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> capability & 1)
    raise LookupError(f"{status} has no CapEff line: cannot tell this process's capabilities")


def require_capability(capability: int, to: str) -> None:
    """Skip, naming the capability, where this process lacks it; ``to`` says what it is needed for."""
    if not has_capability(capability):
        name = _NAMES.get(capability, f"capability {capability}")
        reason = (
            f"needs {name} to {to}: this machine withholds it from the test process (run as root outside an "
            "unprivileged container)"
        )
        raise pytest.skip.Exception(reason, _use_item_location=True)  # the summary names the test, as skipif's do


def require_tool(command: str, package: str, to: str) -> str:
    """The path of ``command``; a failure naming the Debian package otherwise (``.ci/run`` installs it)."""
    found = shutil.which(command)
    if found is None:
        pytest.fail(f"this test needs {command} to {to}; install it (Debian: apt-get install {package})", pytrace=False)
    return found
