"""bench/settle.py: a process group is waited for while it uses the CPU, and not once it is idle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from settle import group_seconds, settle  # noqa: E402

SPIN_THEN_SLEEP = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {spin}: pass\ntime.sleep(60)"


def _group(spin: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", SPIN_THEN_SLEEP.format(spin=spin)], start_new_session=True)


def test_a_busy_group_is_waited_for_until_it_idles() -> None:
    proc = _group(spin=1.5)
    try:
        waited = settle(proc.pid, step=0.25, limit=20.0)
        assert 1.0 <= waited < 20.0
        assert group_seconds(proc.pid) > 0.5  # the spin's time was counted under its group
    finally:
        proc.kill()
        proc.wait()


def test_an_idle_group_costs_one_step_and_a_busy_one_stops_at_the_limit() -> None:
    idle = _group(spin=0.0)
    busy = _group(spin=60.0)
    try:
        settle(idle.pid, step=0.25, limit=5.0)  # its start-up
        assert settle(idle.pid, step=0.25, limit=5.0) < 0.75
        assert 1.0 <= settle(busy.pid, step=0.25, limit=1.0) < 2.0
    finally:
        for proc in (idle, busy):
            proc.kill()
            proc.wait()
