"""What every tritonserver repogen starts has in common, wherever its binary comes from.

A server is one process started in its own session, so that it and the backend stubs it spawns form
one process group: stopping it can never leave a stub behind. Its ports are picked free on loopback,
its log goes to a file, and its HTTP client sends the key of its :class:`Access`. What differs is
the command line and environment: the embedded server (:class:`~.process.TritonServer`), the user's
own binary (:class:`~.external.ExternalTritonServer`) and ``docker run`` of an image
(:class:`~.container.ContainerTritonServer`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, TypeVar

from repogen.errors import TritonServerError
from repogen.runtime.contract import current
from repogen.server.client.access_key import Access, KeyedClient
from repogen.server.running.leftovers import Leftover, end_leftover_stubs
from repogen.triton.endpoints import METRICS_PATH

from .host import HOST, free_ports, group_pids, http_client, is_ready, pid_alive

__all__ = ["LOG_TAIL_LINES", "ServerProcess"]

LOG_TAIL_LINES = 60
_S = TypeVar("_S", bound="ServerProcess")


class ServerProcess:
    """A tritonserver process serving ``model_repository``; a subclass says how it is started.

    Use as a context manager (start, wait until ready, stop) or call :meth:`start`,
    :meth:`wait_ready` and :meth:`stop` yourself. ``access``: the API groups only its key reaches
    (``repogen serve`` always gives one; without, every API is open, as tritonserver's own default);
    :meth:`client` sends the key.
    """

    def __init__(
        self,
        model_repository: str | Path,
        *,
        http_port: int | None = None,
        grpc_port: int | None = None,
        metrics_port: int | None = None,
        log_verbose: int = 0,
        log_path: str | Path | None = None,
        extra_args: Sequence[str] = (),
        access: Access | None = None,
    ) -> None:
        self.model_repository = Path(model_repository).resolve()
        self.access = access
        ports = iter(free_ports(3))
        self.http_port = http_port or next(ports)
        self.grpc_port = grpc_port or next(ports)
        self.metrics_port = metrics_port or next(ports)
        self.log_verbose = log_verbose
        self.extra_args = tuple(extra_args)
        self._own_log_dir: Path | None = None  # made here: removed when the ``with`` block ends without error
        self._final_log: str | None = None
        if log_path is None:
            self._own_log_dir = Path(tempfile.mkdtemp(prefix="repogen-tritonserver-"))
            log_path = self._own_log_dir / "tritonserver.log"
        self.log_path = Path(log_path)
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: BinaryIO | None = None
        self.leftovers_ended: list[Leftover] = []
        """Stubs of servers gone before this one started, ended by :meth:`start` (server/leftovers.py)."""

    # ------------------------------------------------------------------ addresses

    @property
    def http_url(self) -> str:
        """``host:port`` as ``tritonclient.http.InferenceServerClient(url=...)`` expects."""
        return f"{HOST}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"{HOST}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.metrics_port}{METRICS_PATH}"

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise TritonServerError("tritonserver is not started; call start() first")
        return self._proc.pid

    def loopback_args(self) -> list[str]:
        """tritonserver's flags binding its three endpoints to loopback at this server's ports, and its verbosity."""
        return [
            *(f"--{endpoint}-address={HOST}" for endpoint in ("http", "grpc", "metrics")),
            f"--http-port={self.http_port}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={self.metrics_port}",
            f"--log-verbose={self.log_verbose}",
        ]

    # ------------------------------------------------------------------ what subclasses say

    def command(self) -> list[str]:
        """The full command line that starts this server."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The environment that command runs in."""
        raise NotImplementedError

    def restricts(self) -> dict[str, bool]:
        """Which of its protocols this server can keep behind the key: ``{"http": ..., "grpc": ...}``."""
        raise NotImplementedError

    def backends(self) -> tuple[str, ...] | None:
        """The backends it has, sorted; None when unknown (the user's binary, a container image)."""
        return None

    def restriction_args(self) -> list[str]:
        """The restriction flags for :attr:`access`, as far as the release has them."""
        if self.access is None:
            return []
        return self.access.server_args(**self.restricts())

    # ------------------------------------------------------------------ process

    def start(self: _S) -> _S:
        """Launch tritonserver in a new session (its own process group); output goes to :attr:`log_path`."""
        if self._proc is not None:
            raise TritonServerError(f"tritonserver already started (pid {self._proc.pid})")
        if not self.model_repository.is_dir():
            raise TritonServerError(
                f"model repository {self.model_repository} is not a directory; build one first "
                "(repogen build ... -o DIR) and pass DIR."
            )
        self.leftovers_ended = end_leftover_stubs()  # they hold memory and /dev/shm and serve nobody
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("wb")
        for leftover in self.leftovers_ended:  # first in the log, which `repogen serve` shows
            self._log_file.write(f"repogen: ended {leftover.describe()}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            self.command(),
            env=self.environment(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait_ready(self: _S, timeout: float = 120.0) -> _S:
        """Poll readiness (``/v2/health/ready``) until 200; raise with the log tail if the server exits or times out."""
        proc = self._proc
        if proc is None:
            raise TritonServerError("tritonserver is not started; call start() first")
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise self._error(f"tritonserver exited with code {proc.returncode} before becoming ready")
                if is_ready(client):
                    return self
                time.sleep(0.2)
        raise self._error(
            f"tritonserver was not ready after {timeout:.0f} s (models still loading or failing; "
            "pass a longer timeout or check the log)"
        )

    def process_group_pids(self) -> list[int]:
        """Live PIDs of the server and the backend stubs it spawned."""
        return group_pids(self.pid) if self._proc is not None else []

    def stop(
        self, timeout: float = 30.0, unloaded_grace: float | None = None, unload_first: bool = False
    ) -> int | None:
        """SIGINT (graceful unload), SIGKILL after ``timeout`` s, then kill leftover stubs and free their shm.

        ``unloaded_grace``: once every backend stub has exited (its models unloaded, ``finalize`` run), the
        server gets this long before SIGKILL; all it does then is close its endpoints in 1 s ticks, a second
        of ``repogen serve``'s Ctrl+C. ``unload_first`` (a server with explicit model control): unload every
        ready model through model control and wait for the stubs to exit before the SIGINT. tritonserver
        2.51 spends its whole ``--exit-timeout-secs`` waiting for open HTTP connections before it unloads
        anything and then exits without waiting for the unload, so a client holding a keep-alive connection
        would keep every ``finalize`` from running. A stub killed here, or left running by a server that
        gave up on its exit timeout, keeps its ``/dev/shm`` region: it is removed once the group is gone.
        Returns the server's exit code (``None`` if it was never started).
        """
        proc = self._proc
        if proc is None:
            return None
        regions = self._stub_regions()
        if proc.poll() is None:
            if unload_first and regions:
                self._unload_all(regions, timeout)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)
            stubs = {pid: region for pid, region in regions.items() if pid_alive(pid)}
            if not self._wait_stopped(proc, timeout, stubs if unloaded_grace is not None else {}, unloaded_grace):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        self._kill_group_leftovers(proc.pid)
        for region in regions.values():
            with contextlib.suppress(OSError):
                os.unlink(region)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return proc.returncode

    def _unload_all(self, stubs: dict[int, str], timeout: float) -> None:
        """Ask the server to unload every ready model (each on its own thread, should an answer wait for the
        unload), then wait until ``stubs`` have exited, each after its ``finalize``, and the index shows no
        model still unloading, or ``timeout`` s. A stub exits before its model's unload is over: the server
        logs "successfully unloaded" and only then marks the model UNAVAILABLE (model_lifecycle.cc)."""
        try:
            names = [m["name"] for m in self.models_status() if m.get("state") == "READY"]
        except Exception:  # no answer: the SIGINT unloads them
            return
        threads = [threading.Thread(target=self._unload, args=(name, timeout), daemon=True) for name in names]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        while any(pid_alive(pid) for pid in stubs) and time.monotonic() < deadline and self.is_running():
            time.sleep(0.02)
        while time.monotonic() < deadline and self.is_running() and self._still_unloading(names):
            time.sleep(0.02)

    def _still_unloading(self, names: list[str]) -> bool:
        """Whether any of ``names`` is still READY or UNLOADING in the index (False once it cannot be read)."""
        try:
            index = self.models_status()
        except Exception:  # no answer: the SIGINT ends what is left
            return False
        return any(m["name"] in names and m.get("state") in ("READY", "UNLOADING") for m in index)

    def _unload(self, name: str, timeout: float) -> None:
        from tritonclient.utils import InferenceServerException

        with contextlib.suppress(OSError, InferenceServerException), self.client(timeout) as client:
            client.unload_model(name)

    def _stub_regions(self) -> dict[int, str]:
        """The server's backend stubs now, pid -> the ``/dev/shm`` region each names on its command line."""
        found = {}
        for pid in self.process_group_pids():
            stub = current(f"/proc/{pid}/cmdline")
            if stub is not None:
                found[pid] = stub.region_path
        return found

    @staticmethod
    def _wait_stopped(
        proc: subprocess.Popen[bytes], timeout: float, stubs: dict[int, str], grace: float | None
    ) -> bool:
        """Whether the server exited by itself within ``timeout`` (or ``grace`` after its ``stubs`` all exited)."""
        deadline = time.monotonic() + timeout
        unloaded_at: float | None = None
        while proc.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                return False
            if grace is not None and stubs and not any(pid_alive(pid) for pid in stubs):
                unloaded_at = unloaded_at or now
                if now - unloaded_at >= grace:
                    return False
            time.sleep(0.02)
        return True

    def _kill_group_leftovers(self, pgid: int, timeout: float = 10.0) -> None:
        """Stubs live in the server's process group; make sure none outlives the server."""
        if not group_pids(pgid):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while group_pids(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)

    # ------------------------------------------------------------------ context manager

    def __enter__(self: _S) -> _S:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None and self._own_log_dir is not None:  # after an error, the log stays for its reader
            self._final_log = self.log_text()
            shutil.rmtree(self._own_log_dir, ignore_errors=True)
            self._own_log_dir = None

    # ------------------------------------------------------------------ logs

    def log_text(self) -> str:
        """Everything the server has written so far."""
        if self._final_log is not None:
            return self._final_log
        if self._log_file is not None:
            self._log_file.flush()
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _error(self, message: str) -> TritonServerError:
        return TritonServerError(
            f"{message}.\ncommand: {' '.join(self.command())}\nlog: {self.log_path}\n"
            f"--- last {LOG_TAIL_LINES} log lines ---\n{self.log_tail()}"
        )

    # ------------------------------------------------------------------ the server's HTTP endpoint

    @contextlib.contextmanager
    def client(self, timeout: float = 5.0) -> Iterator[Any]:
        """A ``tritonclient.http.InferenceServerClient`` of this server sending its key, closed on exit."""
        with http_client(self.http_url, timeout) as client:
            yield KeyedClient(client, self.access.headers("http") if self.access else {})

    def models_status(self) -> list[dict[str, Any]]:
        """The repository index: one dict (name, version, state, reason) per model."""
        from tritonclient.utils import InferenceServerException

        with self.client() as client:
            try:
                index: list[dict[str, Any]] = client.get_model_repository_index()
            except InferenceServerException as exc:
                raise TritonServerError(f"the repository index of {self.http_url} failed: {exc.message()}") from exc
        return index

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether model ``name`` (optionally one ``version``) is loaded and ready."""
        with self.client(timeout=2.0) as client:
            try:
                return bool(client.is_model_ready(name, version))
            except Exception:  # unreachable: not ready
                return False
