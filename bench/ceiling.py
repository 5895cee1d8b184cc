"""The machine's own parallel ceiling for the instances benchmark, measured without Triton.

"2 instances >= 1.8x one" assumes two idle cores. On a shared machine they are not: this runs
the same pure-Python spin (bench/apps/app.py: ``spin``) in 1 and then 2 plain processes for the
same window, so the report can put the Triton ratio next to what the hardware allowed just then.
"""

from __future__ import annotations

import multiprocessing as mp
import time

CPU_LOOP = 200_000  # bench/apps/app.py: CPU_LOOP


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def _worker(window: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    end = time.perf_counter() + window
    done = 0
    while time.perf_counter() < end:
        _spin(CPU_LOOP)
        done += 1
    out.put(done)


def spins_per_s(processes: int, window: float) -> float:
    """Total spins per second of ``processes`` processes spinning together."""
    queue: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    procs = [mp.Process(target=_worker, args=(window, queue)) for _ in range(processes)]
    for p in procs:
        p.start()
    total = sum(queue.get() for _ in procs)
    for p in procs:
        p.join()
    return total / window
