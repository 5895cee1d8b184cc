"""Backend stubs that outlived their tritonserver: found by their command line, ended, their shm freed.

A stub watches its server and exits when the server is gone, but only once its model has loaded:
a tritonserver stopped (SIGTERM, SIGKILL, a crashed test run) while models were still loading can
leave stubs running, each holding its ``/dev/shm`` region and its memory, forever. A stub names its
server's pid on its command line (``runtime.stub``); one whose server is gone (no longer its
parent, or a zombie) serves nobody, so ``repogen serve`` and the test harness end it before starting a
server of their own. Only stubs of this user are looked at (signalling others' would fail anyway), and
only those in this process's PID namespace: a stub in a container names its server by the container's
pid (1 when tritonserver is the container's first process), which means nothing out here, and ending it
would take a model from a server that still runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogen.runtime.contract import Stub, current

__all__ = ["SWEEP_LOCK", "Leftover", "end_leftover_stubs", "leftover_stubs"]

_PROC = Path("/proc")

SWEEP_LOCK = FileLock(f"/tmp/repogen-leftover-sweep-{os.getuid()}.lock")
"""Held while a process ends leftover stubs: one fixed path (not $TMPDIR's), so every process of this user on the
machine takes turns. A test that leaves a stub on purpose holds it (reentrant in its thread) until its own server
start ends that stub, so that no other process's start (a test run beside it) ends it first."""


@dataclass(frozen=True)
class Leftover:
    pid: int
    model_file: str
    stub: Stub

    def describe(self) -> str:
        return (
            f"backend stub pid {self.pid} ({self.model_file}) outlived its tritonserver (pid {self.stub.server_pid}); "
            f"shared memory {self.stub.region_path}"
        )


def _argv(pid_dir: Path) -> list[str]:
    try:
        return (pid_dir / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
    except OSError:
        return []


def _pid_namespace(pid_dir: Path) -> str | None:
    try:
        return os.readlink(pid_dir / "ns" / "pid")
    except OSError:
        return None


def leftover_stubs(proc: Path = _PROC) -> list[Leftover]:
    """This user's running backend stubs whose server is gone (or whose pid now belongs to something else)."""
    found = []
    uid = os.getuid()
    namespace = _pid_namespace(proc / "self")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
        except OSError:
            continue
        if _pid_namespace(entry) != namespace:  # a container's stub: its server pid is another namespace's
            continue
        stub = current(str(entry / "cmdline"))
        if stub is None or _serving(int(entry.name), stub.server_pid):
            continue
        argv = _argv(entry)
        found.append(Leftover(int(entry.name), argv[1] if len(argv) > 1 else "?", stub))
    return sorted(found, key=lambda leftover: leftover.pid)


def end_leftover_stubs(timeout: float = 5.0) -> list[Leftover]:
    """SIGKILL every leftover stub, wait for it to go, remove its shm region; return what was ended."""
    with SWEEP_LOCK:
        leftovers = leftover_stubs()
        for leftover in leftovers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(leftover.pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(_running(leftover.pid) for leftover in leftovers):
            time.sleep(0.05)
        for leftover in leftovers:
            with contextlib.suppress(OSError):
                os.unlink(leftover.stub.region_path)
    return leftovers


def _stat(pid: int) -> tuple[str, int]:
    """(state, parent pid) of ``pid``; ("", 0) when it is gone."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return "", 0


def _running(pid: int) -> bool:
    return _stat(pid)[0] not in ("", "Z")


def _serving(stub_pid: int, server_pid: int) -> bool:
    """Whether the stub's server still runs: it is still the stub's parent and not a zombie.

    A stub whose server died is re-parented (so a reused server pid is never mistaken for its
    server), and a server killed but not yet reaped is a zombie. The binary's name is not checked:
    ``repogen serve --tritonserver`` may run one by another name.
    """
    state, parent = _stat(stub_pid)
    if state == "":  # the stub itself has gone meanwhile: nothing to end
        return True
    return parent == server_pid and _running(server_pid)
