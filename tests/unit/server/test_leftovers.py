"""server/leftovers.py tells a stub whose server is gone from one whose server still runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from repogen.server.running.leftovers import leftover_stubs

STUB = "/opt/tritonserver/backends/python/triton_python_backend_stub"


def _fake_stub(server_pid: int) -> subprocess.Popen[bytes]:
    """A shell whose command line reads like a stub's, ``stub <model.py> <region> <bytes> <growth> <server pid>``:
    ``-c`` in the model file's place and its script in the region's."""
    argv = [STUB, "-c", "sleep 30; :", "1048576", "1048576", str(server_pid)]
    return subprocess.Popen(argv, executable="/bin/sh")


def _wait_for_cmdline(pid: int) -> None:
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(STUB.encode()):
        assert time.monotonic() < deadline, f"process {pid} never took the stub's command line"
        time.sleep(0.02)


def test_a_stub_whose_server_is_gone_is_a_leftover_and_one_whose_server_runs_is_not() -> None:
    server = subprocess.Popen(["sleep", "30"])
    orphan = _fake_stub(server.pid)  # its parent is this process, not the "server": re-parented, as after a crash
    served = _fake_stub(os.getpid())  # its parent is this process, named as its server: still served
    try:
        _wait_for_cmdline(orphan.pid)
        _wait_for_cmdline(served.pid)
        found = {leftover.pid: leftover for leftover in leftover_stubs()}
        assert orphan.pid in found and served.pid not in found
        assert found[orphan.pid].stub.server_pid == server.pid
        assert found[orphan.pid].stub.region == "sleep 30; :" and found[orphan.pid].model_file == "-c"
    finally:
        for proc in (server, orphan, served):
            proc.send_signal(signal.SIGKILL)
            proc.wait()


def test_a_stub_in_another_pid_namespace_is_never_a_leftover() -> None:
    """A container's stub names its server by the container's pid (1): from here that is not its parent, yet
    its server runs. ``repogen serve`` on the host once SIGKILLed such stubs of every running container."""
    script = f"import os; os.execv('/bin/sh', [{STUB!r}, '-c', 'sleep 30; :', '1048576', '1048576', '1'])"
    unshare = ["unshare", "--pid", "--fork", "--kill-child"]
    if os.geteuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    namespaced = subprocess.Popen([*unshare, sys.executable, "-c", script])
    orphan = _fake_stub(1)  # the same command line in this namespace: pid 1 is not its parent, a leftover
    try:
        deadline = time.monotonic() + 10
        inside: list[int] = []
        while not inside and time.monotonic() < deadline:
            children = Path(f"/proc/{namespaced.pid}/task/{namespaced.pid}/children").read_text().split()
            inside = [int(pid) for pid in children if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(
                STUB.encode())]  # fmt: skip
            time.sleep(0.05)
        assert inside, "the stub in a new PID namespace did not start"
        _wait_for_cmdline(orphan.pid)
        found = {leftover.pid for leftover in leftover_stubs()}
        assert inside[0] not in found and orphan.pid in found
    finally:
        for proc in (namespaced, orphan):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
