"""Which backend stubs a server ran, and whether any of them died of a segfault, from the kernel's log.

A stub that crashes while its Python shuts down (freed metric families do: runtime/user_metrics.py) has run its
``atexit`` handlers already, and its server logs nothing of it; the kernel logs every segfault
(``triton_python_b[PID]: segfault at ...``). Reading that log needs ``CAP_SYSLOG`` where ``kernel.dmesg_restrict``
is set: a test skips, naming it, where the machine withholds it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from repogen.runtime.contract import current

__all__ = ["CAP_SYSLOG", "CRASHED", "died_of_a_signal", "kernel_clock", "segfaults", "stubs_of"]

CRASHED = re.compile(r"Signal \(\d+\) received")
"""What tritonserver's own handler writes as it dies of a signal (its gRPC frontend's races: known_issues.py)."""
CAP_SYSLOG = 34
"""Reading the kernel log where ``kernel.dmesg_restrict`` is 1 (capabilities(7))."""
_SEGFAULT = re.compile(r"^\[\s*(\d+\.\d+)\] triton_python_b\[(\d+)\]: segfault")


def kernel_clock() -> float:
    """Seconds since boot, the clock of the kernel log's timestamps: lines before it are another run's."""
    return float(Path("/proc/uptime").read_text().split()[0])


def stubs_of(server_pid: int, proc: Path = Path("/proc")) -> dict[int, str]:
    """The running backend stubs of the server ``server_pid``: pid -> the model.py it serves."""
    found = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stub = current(str(entry / "cmdline"))
        if stub is not None and stub.server_pid == server_pid:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            found[int(entry.name)] = argv[1] if len(argv) > 1 else "?"
    return found


def segfaults(pids: set[int] | dict[int, str], since: float) -> list[str]:
    """The kernel's lines, logged after ``since`` (:func:`kernel_clock`), saying one of ``pids`` died of a segfault
    (a skip where the kernel log is not readable). Earlier lines may name a reused pid."""
    dmesg = shutil.which("dmesg")
    if dmesg is None:
        pytest.fail("this test reads the kernel log with dmesg; install it (Debian: apt-get install util-linux)")
    done = subprocess.run([dmesg], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(
            f"needs CAP_SYSLOG to read the kernel log (dmesg: {done.stderr.strip()}): this machine withholds it"
        )
    found = []
    for line in done.stdout.splitlines():
        match = _SEGFAULT.match(line)
        if match and float(match.group(1)) >= since and int(match.group(2)) in pids:
            found.append(line)
    return found


def died_of_a_signal(server: Any, wait_s: float = 10.0) -> str | None:
    """``Signal (6) received`` where ``server`` (a TritonServer) died of one, else None; a dying server writes its
    stack before it exits, so this waits up to ``wait_s`` for one that has written the line to end (a server
    running without it is alive: no wait)."""
    deadline = time.monotonic() + wait_s
    while server.is_running() and CRASHED.search(server.log_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    found = CRASHED.search(server.log_text()) if not server.is_running() else None
    return found.group(0) if found else None
