"""Waiting out a server's CPU after its measurement, before the next model's.

``make bench`` rotates the order of repogen's generated model, its hand-written twin and PyTriton's, so the
generated model is measured right after PyTriton's in most rounds and the hand-written one never is. PyTriton's
processes can go on using the CPU after perf_analyzer stops: sampled once (2026-11-29, /proc ticks over 3 s) during
the generated model's next point, its stub used 26 % of a core, its app 22 %, its tritonserver 8 % (another sample
after another point saw none). On two cores that is taken from the model measured next; the run's low rounds
(16 floats over gRPC, 0.71-0.80) all had the generated model right after PyTriton's. Waiting here takes the
suspect out of the measurement; whether it was the cause is for the next full run to show.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from repogen.server.running.host import group_pids

IDLE_SHARE = 0.05  # of one core, over a step: below it the group is idle
STEP_S = 0.5  # /proc counts in ticks of 10 ms: a 0.5 s step tells 5 % from 0
LIMIT_S = 10.0
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid``, all its threads (onnxruntime's pool too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def group_seconds(group: int) -> float:
    """CPU time so far of every live process in process group ``group``."""
    total = 0.0
    for pid in group_pids(group):
        with contextlib.suppress(OSError):  # gone meanwhile
            total += cpu_seconds(pid)
    return total


def settle(group: int, idle_share: float = IDLE_SHARE, step: float = STEP_S, limit: float = LIMIT_S) -> float:
    """Wait until process group ``group`` uses under ``idle_share`` of a core over a ``step``; the seconds waited
    (``limit`` at most: a group that never goes idle is measured beside, and the sample says how long was waited)."""
    began = time.monotonic()
    before = group_seconds(group)
    while True:
        time.sleep(step)
        now = group_seconds(group)
        waited = time.monotonic() - began
        if now - before < idle_share * step or waited >= limit:
            return waited
        before = now
