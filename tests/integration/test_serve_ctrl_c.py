"""Ctrl+C on `repogen serve`: every instance's ``finalize`` runs, exit status 0, no process of the
server's group and no ``/dev/shm`` region of its stubs left, in about 1.2 s with no client connected.

Where the time goes (2.51/3.10, strace and ``--log-verbose=1``, docs/deployment.md): the server starts unloading
~10 ms after the SIGINT; the Python backend then sleeps 1 s in every instance's unload before it sends the stub its
finalize request (``StubLauncher::UpdateHealth``, ``sleep(1)``, stub_launcher.cc, r23.10 and r24.10), one instance
of a model after the other; the stub runs ``finalize`` and exits ~0.05-0.15 s later; serve ends the server as soon
as every stub has exited and exits ~0.05 s after. So ≤ 1 s is out of reach without skipping ``finalize``, and a
model's instances add ~1.1 s each.

Those seconds are not asserted (a loaded machine stretches every one of them); what makes them is. The server's
log, streamed by serve, says who ended the server: tritonserver checks its live models once a second
("Timeout N: Found M live models ...") and exits on its own only after a check finds none, or once its exit
timeout has run out; serve ends it as soon as its stubs have exited, before that check. The ``finalize`` and
``atexit`` files hold the time each ran, so the order of events is read from them.

With a client holding an HTTP keep-alive connection, tritonserver 2.51 spends its whole ``--exit-timeout-secs``
waiting for it (since 2.45), then exits without waiting for the unload it has begun: no ``finalize`` runs (2.39
has no such wait). Under explicit model control serve unloads every model before the SIGINT, so ``finalize``
runs there too.
"""

from __future__ import annotations

import http.client
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from serve_cli import ServeProcess, cli_env, group_pids

from repogen.runtime.contract import current
from repogen.testing.pytest_plugin import TritonInstallation
from repogen.triton.releases import version_tuple

pytestmark = pytest.mark.integration

APP = "tests/apps/ctrl_c/app.py:models"
EXIT_TIMEOUT = 3  # s: the --exit-timeout-secs serve passes
BACKEND_SLEEP = 1.0  # s: the Python backend's sleep in every instance's unload, before its finalize request
SIGNALED = "Signal (2) received."
# tritonserver decided to exit by itself: a check found no live model left, or its exit timeout ran out
ENDED_ITSELF = re.compile(r'"Timeout \d+: Found 0 live models|Exit timeout expired')


@dataclass(frozen=True)
class Stop:
    """One Ctrl+C: when each file of tests/apps/ctrl_c was written (s after the SIGINT); serve's output after it."""

    marks: dict[str, float]
    log: list[str]
    seconds: float  # until serve exited: reported, never asserted

    def line(self, text: str) -> int:
        """The index of the first line holding ``text`` (an assertion error naming the output without one)."""
        found = [index for index, line in enumerate(self.log) if text in line]
        assert found, f"no line with {text!r} after the SIGINT:\n" + "\n".join(self.log)
        return found[0]

    def ended_by_the_server(self) -> list[str]:
        return [line for line in self.log if ENDED_ITSELF.search(line)]


def _ctrl_c(install: TritonInstallation, tmp_path: Path, *args: str, instances: int = 1, client: bool = False) -> Stop:
    """Serve the app, Ctrl+C it; what the stop wrote and logged."""
    finalized = tmp_path / f"finalized-{time.monotonic_ns()}"
    finalized.mkdir()
    env = cli_env(REPOGEN_TEST_FINALIZE_DIR=str(finalized), REPOGEN_TEST_CLOSER_INSTANCES=str(instances))
    serve = ServeProcess(APP, install, *args, env=env)
    connection = None
    try:
        server_pid = int(serve.wait_for(r"ready \(pid (\d+)\)")[1])
        serve.wait_for(r"Press Ctrl\+C to stop\.")
        argv = Path(f"/proc/{server_pid}/cmdline").read_bytes().decode().split("\0")
        assert "--exit-timeout-secs=3" in argv
        stubs = [s for s in (current(f"/proc/{pid}/cmdline") for pid in group_pids(server_pid)) if s is not None]
        regions = [stub.region_path for stub in stubs]
        assert len(regions) == instances + 1 and all(os.path.exists(region) for region in regions)
        if client:
            connection = http.client.HTTPConnection("127.0.0.1", serve.http, timeout=30)
            connection.request("GET", "/v2/health/ready")
            assert connection.getresponse().read() == b""  # answered; the connection stays open
        mark = len(serve.lines)
        started, signaled = time.monotonic(), time.time()
        assert serve.stop() == 0
        elapsed = time.monotonic() - started
    finally:
        serve.stop()
        if connection is not None:
            connection.close()
    assert "tritonserver stopped." in serve.output()
    assert group_pids(server_pid) == []
    assert [region for region in regions if os.path.exists(region)] == []
    marks = {path.name: float(path.read_text()) - signaled for path in finalized.iterdir()}
    return Stop(marks, serve.lines[mark:], elapsed)


def _closers(instances: int) -> set[str]:
    return {f"Closer-Closer_0_{index}" for index in range(instances)}


def _exited(instances: int) -> set[str]:
    """``finalize`` ran, then the stub's Python shut down normally: its ``atexit`` handlers ran."""
    return _closers(instances) | {f"atexit-{name}" for name in _closers(instances)}


def _assert_finalized_in_order(stop: Stop, instances: int) -> None:
    """Each instance's ``finalize`` ran after the SIGINT and its stub's ``atexit`` handlers after that."""
    assert set(stop.marks) == _exited(instances), stop
    for name in _closers(instances):
        assert 0 < stop.marks[name] <= stop.marks[f"atexit-{name}"], stop


def test_ctrl_c_runs_finalize_and_ends_the_server_once_its_stubs_exit(
    triton_install: TritonInstallation, tmp_path: Path
) -> None:
    stop = _ctrl_c(triton_install, tmp_path)
    _assert_finalized_in_order(stop, 1)
    # the SIGINT began the unload, and serve ended the server before tritonserver's next check would have
    assert stop.line(SIGNALED) < stop.line("successfully unloaded 'Closer' version 1"), stop.log
    assert stop.ended_by_the_server() == [], f"serve waited for tritonserver to exit by itself ({stop.seconds:.2f} s)"
    print(f"\nCtrl+C took {stop.seconds:.2f} s")


def test_instances_of_a_model_unload_one_after_another(triton_install: TritonInstallation, tmp_path: Path) -> None:
    stop = _ctrl_c(triton_install, tmp_path, instances=2)
    _assert_finalized_in_order(stop, 2)
    first, second = sorted(stop.marks[name] for name in _closers(2))
    assert second - first >= BACKEND_SLEEP, stop  # the second instance's unload began with its own sleep
    assert stop.ended_by_the_server() == [], f"serve waited for tritonserver to exit by itself ({stop.seconds:.2f} s)"


def _waits_for_connections(install: TritonInstallation) -> bool:
    """From 2.45 (24.04, main.cc StopEndpoints(&exit_timeout_secs)) the server spends the whole exit timeout waiting
    for open HTTP connections, then exits while the backend still sleeps before the finalize request."""
    return version_tuple(install.install.release.tritonserver) >= (2, 45)


def _connection_waits(stop: Stop) -> list[str]:
    return [line for line in stop.log if "HTTP service connections" in line]


def test_keep_alive_client_explicit_control_runs_finalize(triton_install: TritonInstallation, tmp_path: Path) -> None:
    stop = _ctrl_c(triton_install, tmp_path, "--model-control-mode", "explicit", client=True)
    _assert_finalized_in_order(stop, 1)
    # serve unloaded every model through model control, and only then sent the SIGINT
    assert stop.line("successfully unloaded 'Closer' version 1") < stop.line(SIGNALED), stop.log
    assert stop.line("successfully unloaded 'Echo' version 1") < stop.line(SIGNALED), stop.log
    # the server waited out its exit timeout for the connection (no longer), then found nothing left and exited
    waits = _connection_waits(stop)
    assert len(waits) == (EXIT_TIMEOUT if _waits_for_connections(triton_install) else 0), waits
    assert [line for line in stop.ended_by_the_server() if "Found 0 live models" in line], stop.log


def test_keep_alive_client(triton_install: TritonInstallation, tmp_path: Path) -> None:
    stop = _ctrl_c(triton_install, tmp_path, client=True)
    finalized = set(stop.marks) - {f"atexit-{name}" for name in _closers(1)}
    if _waits_for_connections(triton_install):
        # the exit timeout went by waiting for the connection: the server gave up before any finalize request
        assert len(_connection_waits(stop)) == EXIT_TIMEOUT, stop.log
        assert any("Exit timeout expired" in line for line in stop.ended_by_the_server()), stop.log
        assert finalized == set(), stop
    else:
        assert finalized == _closers(1), stop
