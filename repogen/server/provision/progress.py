"""Progress for slow first-use steps (downloading tritonserver, creating a venv), on stderr.

``progress`` is silent when the step is quick (everything cached); after a second it reports the
elapsed time — in place on a terminal, every 10 s as a line otherwise (CI logs).
``DownloadProgress`` shows a download's bytes and percent — in place on a terminal, a line per
tenth otherwise.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["DownloadProgress", "progress"]


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


class DownloadProgress:
    """``with DownloadProgress(name) as report: download(report=report)``; ``report(done, total)`` in bytes."""

    def __init__(self, what: str, stream: TextIO | None = None) -> None:
        self.what = what
        self.out = stream or sys.stderr
        self.tty = self.out.isatty()
        self._shown_tenth = -1
        self._last = ""

    def _line(self, done: int, total: int) -> str:
        if total <= 0:
            return f"  downloading {self.what}: {done / 1e6:.1f} MB"
        return f"  downloading {self.what}: {done / 1e6:.1f} of {total / 1e6:.1f} MB ({100 * done // total}%)"

    def __call__(self, done: int, total: int) -> None:
        line = self._line(done, total)
        if self.tty:
            self.out.write(f"\r{line}")
        else:
            tenth = 10 * done // total if total > 0 else done // 10_000_000
            if tenth == self._shown_tenth:
                return
            self._shown_tenth = tenth
            self.out.write(f"{line}\n")
        self._last = line
        self.out.flush()

    def __enter__(self) -> DownloadProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty and self._last:
            self.out.write("\n")
            self.out.flush()
