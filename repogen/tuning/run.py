"""Running Model Analyzer, and stopping everything it started however the run ends.

Model Analyzer starts tritonserver and each perf_analyzer in sessions of their own
(``start_new_session``), so ending its process group would leave them behind. Every one of them names
the run's directory on its command line (tritonserver its model repository, linked there; the
backend stubs their model files under it; perf_analyzer its input data), and that is how they are
found and ended: after a normal exit, an error, a timeout or Ctrl+C.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import TuneError
from .analyzer_config import TunePlan

__all__ = ["processes_naming", "run_model_analyzer", "stop_processes"]

Echo = Callable[[str], None]
_PROC = Path("/proc")
_PREFIX = "[Model Analyzer] "


def processes_naming(directory: Path, proc: Path = _PROC) -> list[int]:
    """This user's live processes whose command line mentions ``directory``."""
    needle = str(directory).encode()
    uid, me = os.getuid(), os.getpid()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid != uid or needle not in (entry / "cmdline").read_bytes():
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
        except OSError:
            continue
        found.append(int(entry.name))
    return sorted(found)


def stop_processes(directory: Path, grace_s: float = 3.0) -> list[int]:
    """SIGTERM what names ``directory``, SIGKILL what is left after ``grace_s``; the pids found first."""
    pids = processes_naming(directory)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while processes_naming(directory) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in processes_naming(directory):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    return pids


def run_model_analyzer(
    executable: Path, plan: TunePlan, echo: Echo, kept: Path, timeout_s: float | None = None
) -> None:
    """``model-analyzer profile`` with the plan's config; its progress lines echoed, its logs named in ``kept``."""
    log_path = plan.workdir / "model-analyzer.log"
    cmd = [str(executable), "profile", "-f", str(plan.config_file)]
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            cmd, env=plan.environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, cwd=plan.workdir,
        )  # fmt: skip
        # The deadline ends Model Analyzer from a timer, so a silent stretch of its output cannot outlast it.
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _end(proc)

        timer = threading.Timer(timeout_s, expire) if timeout_s else None
        try:
            if timer is not None:
                timer.start()
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                text = line.rstrip()
                if text.startswith(_PREFIX) and _worth_showing(text):
                    echo(f"  {text.removeprefix(_PREFIX)}")
            code = proc.wait()
        finally:
            if timer is not None:
                timer.cancel()
            _end(proc)
            stop_processes(plan.workdir)
    if expired.is_set():
        raise TuneError(
            f"Model Analyzer ran past --timeout {timeout_s:.0f}s and was stopped; nothing was recommended. Narrow "
            f"the search (--max-instances, --max-batch-size, --max-concurrency, --model) or allow more time. Its "
            f"log: {kept / log_path.name}"
        )
    if code != 0:
        tail = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()][-8:]
        raise TuneError(
            f"Model Analyzer failed (exit {code}). Last lines of {kept / log_path.name}:\n" + "\n".join(tail) + "\n"
            f"The server's log: {kept / 'tritonserver.log'}"
        )


def _end(proc: subprocess.Popen[str]) -> None:
    """SIGINT Model Analyzer's group; SIGKILL it when it has not exited 5 s later."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _worth_showing(text: str) -> bool:
    """Its progress (each config and load), not its warnings about GPU fields a CPU run has no data for."""
    return any(key in text for key in ("Profiling ", "Creating model config", "Setting ", "Profile complete"))
