"""What tests/integration/test_faults_served.py needs beside a server: continuous load, tmpfs mounts, a small /dev/shm.

* :class:`Load`: clients sending without pause (alternating HTTP and gRPC), every answer checked,
  each request counted as answered right, answered wrong, failed (an error response) or lost (no
  answer within the timeout, or no server to answer).
* :func:`tmpfs` and :func:`shm_server` mount a size-limited tmpfs (root only; the test is skipped with
  the reason otherwise), the latter as ``/dev/shm`` of a tritonserver in its own mount namespace,
  which is what ``docker run --shm-size`` does.
* :func:`record`: one row of the fault table, written to ``$REPOGEN_FAULT_TABLE`` when set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from repogen.server.running.process import TritonServer, TritonServerError
from repogen.testing.prerequisites import CAP_SYS_ADMIN, require_capability

TABLE_ENV = "REPOGEN_FAULT_TABLE"
_LOST_GRPC = ("StatusCode.DEADLINE_EXCEEDED", "StatusCode.UNAVAILABLE")


@dataclasses.dataclass
class Tally:
    sent: int = 0
    ok: int = 0
    wrong: int = 0
    failed: int = 0
    lost: int = 0
    ok_before_mark: int = 0
    failed_before_mark: int = 0
    ok_after_mark: int = 0
    answered_last: bool = False  # each client's last request was answered right
    failed_last: bool = False  # each client's last request failed
    messages: Counter[str] = dataclasses.field(default_factory=Counter)


class Load:
    """``clients`` threads calling ``model`` with one-row ``x`` until the ``with`` block ends."""

    def __init__(self, server: Any, model: str, check: Callable[[np.ndarray, np.ndarray], bool], clients: int = 3):
        self.server, self.model, self.check = server, model, check
        self.tally = Tally()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._marked = False
        self._last: dict[int, str] = {}
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(clients)]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self.tally.answered_last = bool(self._last) and all(o == "ok" for o in self._last.values())
        self.tally.failed_last = bool(self._last) and all(o == "failed" for o in self._last.values())

    def mark(self) -> None:
        """Split the counts here (e.g. at a kill)."""
        with self._lock:
            self._marked = True

    def _run(self, index: int) -> None:
        protocol = "http" if index % 2 else "grpc"
        if protocol == "http":
            client: Any = httpclient.InferenceServerClient(self.server.http_url, network_timeout=10.0)
        else:
            client = grpcclient.InferenceServerClient(self.server.grpc_url)
        module: Any = httpclient if protocol == "http" else grpcclient
        n = 0
        try:
            while not self._stop.is_set():
                n += 1
                x = np.array([[float(n), float(index)]], dtype=np.float32)
                tensor = module.InferInput("x", list(x.shape), "FP32")
                tensor.set_data_from_numpy(x)
                self._count(index, x, lambda: client.infer(self.model, [tensor], **_timeout(protocol)))  # noqa: B023
        finally:
            client.close()

    def _count(self, index: int, x: np.ndarray, call: Callable[[], Any]) -> None:
        outcome, message = "ok", ""
        try:
            result = call()
            outcome = "ok" if self.check(x, result.as_numpy("y")) else "wrong"
        except InferenceServerException as exc:
            message = str(exc.message())
            outcome = "lost" if str(exc.status()) in _LOST_GRPC else "failed"
        except Exception as exc:  # a timeout or a refused connection: no answer at all
            outcome, message = "lost", f"{type(exc).__name__}: {exc}"
        with self._lock:
            tally = self.tally
            tally.sent += 1
            setattr(tally, outcome, getattr(tally, outcome) + 1)
            if message:
                tally.messages[message] += 1
            if outcome == "ok":
                tally.ok_after_mark += self._marked
                tally.ok_before_mark += not self._marked
            elif outcome == "failed" and not self._marked:
                tally.failed_before_mark += 1
            self._last[index] = outcome


def _timeout(protocol: str) -> dict[str, float]:
    return {"client_timeout": 10.0} if protocol == "grpc" else {}


def record(fault: str, sent: int, failed: int, lost: int, saw: str) -> None:
    """Append one row of the fault table to ``$REPOGEN_FAULT_TABLE`` (docs/deployment.md, "Faults")."""
    path = os.environ.get(TABLE_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"| {fault} | {sent} | {failed} | {lost} | {saw} |\n")


def _mount_tmpfs(target: Path, size: str) -> None:
    require_capability(CAP_SYS_ADMIN, f"mount a {size} tmpfs")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], capture_output=True)
    assert done.returncode == 0, f"mounting a {size} tmpfs at {target} failed: {done.stderr.decode().strip()}"


@contextlib.contextmanager
def tmpfs(target: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``target`` for the block (a small disk to fill); unmounted after."""
    target.mkdir(parents=True, exist_ok=True)
    _mount_tmpfs(target, size)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


class _ShmServer(TritonServer):
    """tritonserver in a new mount namespace whose /dev/shm is a tmpfs of ``shm`` bytes (as docker --shm-size)."""

    def __init__(self, *args: Any, shm: str | None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.shm = shm

    def command(self) -> list[str]:
        command = super().command()
        if self.shm is None:
            return command
        mount = f'mount -t tmpfs -o size={shlex.quote(self.shm)} tmpfs /dev/shm && exec "$@"'
        return ["unshare", "--mount", "sh", "-c", mount, "sh", *command]  # exec: the pid stays tritonserver's


@contextlib.contextmanager
def shm_server(
    install: Any, repo: Path, shm: str | None, tmp: Path, *extra: str
) -> Iterator[tuple[TritonServer, TritonServerError | None]]:
    """A started server (or the error that stopped it before it was ready), stopped after the block."""
    if shm is not None:  # checked first: a server that cannot start would pass for one refused by a small /dev/shm
        require_capability(CAP_SYS_ADMIN, "give tritonserver a private /dev/shm (unshare --mount)")
        probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
        assert probe.returncode == 0, f"unshare --mount failed: {probe.stderr.decode().strip()}"
    log = tmp / f"tritonserver-shm-{shm}-{len(list(tmp.glob('tritonserver-shm-*')))}.log"
    server = _ShmServer(repo, install.install, install.venv, shm=shm, log_path=log, extra_args=extra)
    server.start()
    try:
        try:
            server.wait_ready(60)
        except TritonServerError as exc:
            yield server, exc
            return
        yield server, None
    finally:
        server.stop()
