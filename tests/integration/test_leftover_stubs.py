"""A backend stub that outlives its tritonserver is found and ended by the next server's start.

A stub watches its server only once its model has loaded: a server killed while a model is still in
``initialize`` leaves that stub running, holding memory and its /dev/shm region. ``TritonServer.start``
(behind ``repogen serve`` and the test fixtures) ends such stubs first (repogen/server/running/leftovers.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from repogen.server.running.leftovers import SWEEP_LOCK, leftover_stubs
from repogen.server.running.process import pid_alive

pytestmark = pytest.mark.integration

SLOW = Path(__file__).resolve().parents[1] / "repos" / "slow_load"


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_a_stub_left_by_a_killed_server_is_ended_by_the_next_start(triton_install, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(SLOW, repo)
    first = triton_install.server(repo, log_path=tmp_path / "first.log")
    first.start()
    try:
        # in initialize, where the stub is to be left: its model is still loading when its server is killed
        marker = repo / "Slow" / "initializing"
        assert _wait(marker.exists, 60), first.log_tail()
        stub = int(marker.read_text())
        assert stub in first.process_group_pids()
        # Stopped, the stub stays whatever its own watch (kill(server, 0) every 300 ms) makes of the killed server or
        # another process's sweep does: on CI's machine it was gone within the 2 s below in two runs before the lock,
        # for a cause not pinned down. A stub stuck in a long initialize is what the sweep is for; SIGKILL ends it.
        os.kill(stub, signal.SIGSTOP)
        # Held until our second start ends it: no server started meanwhile by a test run beside this one (make test
        # runs tests/containers beside the rest) ends the stub first.
        with SWEEP_LOCK:
            os.kill(first.pid, signal.SIGKILL)  # the server only, as a crash or an OOM kill would
            assert _wait(lambda: not pid_alive(first.pid), 10)
            time.sleep(2)
            assert pid_alive(stub), "the stopped stub is gone: nothing left behind to find"
            assert stub in [leftover.pid for leftover in leftover_stubs()]

            second = triton_install.server(tmp_path / "empty", log_path=tmp_path / "second.log")
            (tmp_path / "empty").mkdir()
            second.start()
        try:
            assert [leftover.pid for leftover in second.leftovers_ended] == [stub]
            assert not pid_alive(stub)
            assert not os.path.exists(second.leftovers_ended[0].stub.region_path)
            assert f"repogen: ended backend stub pid {stub} " in second.log_text()
        finally:
            second.stop()
    finally:
        first.stop()  # kills whatever is left in its process group
