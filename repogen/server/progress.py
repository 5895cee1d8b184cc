"""A quiet progress indicator for slow first-use steps (downloading tritonserver, creating a venv).

Silent when the step is quick (everything cached); after a second it reports the elapsed
time on stderr — in place on a terminal, every 10 s as a line otherwise (CI logs).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["progress"]


@contextmanager
def progress(what: str, stream: TextIO | None = None, delay: float = 1.0) -> Iterator[None]:
    out = stream or sys.stderr
    tty = out.isatty()
    done = threading.Event()
    started = time.monotonic()
    shown = False

    def tick() -> None:
        nonlocal shown
        if done.wait(delay):
            return
        last_line = 0.0
        while not done.is_set():
            elapsed = time.monotonic() - started
            if tty:
                out.write(f"\r  {what}... {elapsed:.0f}s")
                out.flush()
                shown = True
            elif elapsed - last_line >= 10 or not shown:
                out.write(f"  {what}... {elapsed:.0f}s\n")
                out.flush()
                last_line, shown = elapsed, True
            done.wait(1.0)

    thread = threading.Thread(target=tick, name="repogen-progress", daemon=True)
    thread.start()
    outcome = "failed after"
    try:
        yield
        outcome = "done in"
    finally:
        done.set()
        thread.join()
        if shown:
            out.write(f"{chr(13) if tty else ''}  {what}: {outcome} {time.monotonic() - started:.0f}s\n")
            out.flush()
