"""Watching a tritonserver from the foreground: its log copied out, its start and loads checked, its signals.

The server runs in its own process group (see :class:`~repogen.server.running.server_process.ServerProcess`);
:class:`~repogen.server.running.serving.Serving` uses these to stream its log, to say which models failed
to load, to turn SIGINT/SIGTERM into a graceful stop that leaves no server or backend stub behind (a second
signal during the stop kills the whole group at once), and to say what a server that exited said.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, TextIO

from ...errors import ServeError
from ..client.states import failed, failure_lines, model_states
from .server_process import ServerProcess, TritonServerError

__all__ = ["LogPump", "Stop", "check_loaded", "exited", "stop_gracefully", "stopped_by_signals", "wait_started"]

# Once every stub has exited (its models unloaded, finalize run), tritonserver only closes its endpoints in 1 s
# ticks: it is ended then, without a grace period. What Ctrl+C costs (measured on 2.51, docs/deployment.md):
# the Python backend sleeps 1 s in every instance's unload before it sends the stub its finalize request.
UNLOADED_GRACE = 0.0

Echo = Callable[[str], None]


class Stop(KeyboardInterrupt):
    """SIGTERM (or SIGINT) asked the foreground server to stop.

    A ``KeyboardInterrupt`` so that, raised while tritonclient's HTTP client waits in gevent's hub,
    gevent hands it to the main greenlet instead of printing and dropping it.
    """


class LogPump:
    """Copies what the server appends to its log file onto ``out``, except tritonserver's ``--help`` text.

    tritonserver answers a bad argument with its whole usage (~300 lines); from ``Usage:`` on the log is
    held back, and :func:`exited` quotes the lines that say what was wrong instead. ``out`` None: the log
    stays in its file (a server started in-process), and messages name the file alone.
    """

    def __init__(self, path: Path, out: TextIO | None) -> None:
        self.path, self.out = path, out
        self._file: BinaryIO | None = None
        self._partial = b""
        self.usage = False

    def pump(self) -> None:
        if self._file is None:
            try:
                self._file = self.path.open("rb")
            except FileNotFoundError:
                return
        chunk = self._partial + self._file.read()
        if not chunk or self.usage:
            return
        lines = chunk.splitlines(keepends=True)
        self._partial = lines.pop() if not lines[-1].endswith(b"\n") else b""
        for index, line in enumerate(lines):
            if line.startswith(b"Usage: "):
                self.usage = True
                lines = lines[:index]
                break
        if lines and self.out is not None:
            self.out.write(b"".join(lines).decode(errors="replace"))
            self.out.flush()

    def close(self) -> None:
        if self._partial and not self.usage and self.out is not None:
            self.out.write(self._partial.decode(errors="replace"))
        if self._file is not None:
            self._file.close()

    def named(self) -> str:
        """Where the log is to be read, as a message says it."""
        return f"the log above, also in {self.path}" if self.out is not None else f"the log, {self.path}"


@contextmanager
def _signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """``handler`` for SIGINT and SIGTERM in the block; only the main thread may set one (elsewhere: unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(signal.Signals(signum).name)


def stopped_by_signals() -> contextlib.AbstractContextManager[None]:
    """SIGINT and SIGTERM raise :class:`Stop` in the block, as tritonserver stops on either."""
    return _signals(_raise_stop)


def stop_gracefully(server: ServerProcess, explicit: bool = False) -> None:
    """Graceful stop; a further SIGINT/SIGTERM kills the server's whole process group.

    ``explicit`` (the server runs with explicit model control): every model is unloaded before the SIGINT,
    so that its ``finalize`` runs even while a client holds a connection open (see ``ServerProcess.stop``).
    """

    def kill_group(signum: int, frame: FrameType | None) -> None:
        with suppress(ProcessLookupError, PermissionError, TritonServerError):
            os.killpg(server.pid, signal.SIGKILL)

    with _signals(kill_group):
        server.stop(unloaded_grace=UNLOADED_GRACE, unload_first=explicit)


def _answers(call: Callable[[], Any]) -> bool:
    try:
        return bool(call())
    except Exception:  # refused, reset or timed out while the server starts
        return False


def wait_started(server: ServerProcess, pump: LogPump, ready_timeout: float, poll: float) -> None:
    """Until the server answers ``/v2/health/live``: it opens its endpoints only after the first loads end."""
    deadline = time.monotonic() + ready_timeout
    with server.client(timeout=2.0) as client:
        while not _answers(client.is_server_live):
            pump.pump()
            if not server.is_running():
                raise ServeError(exited(server, "before starting", pump))
            if time.monotonic() > deadline:
                raise ServeError(
                    f"tritonserver did not start within {ready_timeout:.0f} s (models still loading; see "
                    f"{pump.named()}). Pass a longer --ready-timeout."
                )
            time.sleep(poll)


def check_loaded(server: ServerProcess, pump: LogPump, loaded: list[str] | None, keep_failed: bool, echo: Echo) -> None:
    """Name every model that failed to load, one line each: fatal, unless ``keep_failed`` (``--reload``)."""
    with server.client(timeout=10.0) as client:
        if _answers(client.is_server_ready):
            return
        try:
            states = model_states(client.get_model_repository_index())
        except Exception as exc:
            raise ServeError(f"tritonserver started but its repository index failed ({exc}); see the log.") from exc
    bad = failed(states, loaded)
    if not bad:
        return
    what = f"{len(bad)} model(s) failed to load (tracebacks in {pump.named()})"
    if not keep_failed:
        raise ServeError(f"{what}; fix them and serve again:\n" + "\n".join(failure_lines(bad)))
    echo(f"{what}; serving the others, and reloading on the next change:")
    for line in failure_lines(bad):
        echo(line)


def _error_lines(log: str) -> list[str]:
    """What tritonserver said went wrong: its error records and unindented messages, never its usage text."""
    found = []
    for line in log.splitlines():
        text = line.strip()
        if not text or line[0] in " \t|+" or text.startswith("Usage: ") or text[0] in "IW" and text[1:5].isdigit():
            continue
        found.append(text)
    return found[-3:]


def exited(server: ServerProcess, when: str, pump: LogPump) -> str:
    """What a server that exited by itself said, and what to do."""
    code = server.stop()  # already exited: this only reaps it and returns its exit code
    said = _error_lines(server.log_text())
    where = "" if pump.usage or pump.out is None else " (its log is above)"
    detail = "".join(f"\n  {line}" for line in said)
    return (
        f"tritonserver exited with code {code} {when}{where}; the full log is in {server.log_path}. "
        f"It said:{detail or ' nothing'}\nFix what it names (an argument after `--`, a port, a model), "
        "or check `repogen validate` on the repository."
    )
