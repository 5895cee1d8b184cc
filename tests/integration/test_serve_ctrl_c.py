"""Ctrl+C on `repogen serve` (issue 25): quick, with or without a client holding a keep-alive connection,
and leaving no process of the server's group and no ``/dev/shm`` region of its stubs behind.

tritonserver waits ``--exit-timeout-secs`` (default 30) for open HTTP connections before unloading
anything; one keep-alive client used to make Ctrl+C take 30 s and end in SIGKILL, leaking the stubs'
regions. `serve` now passes ``--exit-timeout-secs=3`` and ends the server once its stubs have unloaded.
The bound below is generous (measured ~1.4 s without a client, ~4 s with one); before it was 30 s.
"""

from __future__ import annotations

import http.client
import os
import time
from pathlib import Path

import pytest
from serve_cli import ServeProcess, group_pids

from repogen.runtime.stub import current
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("client", [False, True], ids=["no-client", "keep-alive-client"])
def test_ctrl_c_stops_quickly_and_leaves_nothing(triton_install: TritonInstallation, client: bool) -> None:
    serve = ServeProcess("examples/quickstart/app.py:models", triton_install)
    try:
        server_pid = int(serve.wait_for(r"ready \(pid (\d+)\)")[1])
        serve.wait_for(r"Press Ctrl\+C to stop\.")
        argv = Path(f"/proc/{server_pid}/cmdline").read_bytes().decode().split("\0")
        assert "--exit-timeout-secs=3" in argv
        stubs = [s for s in (current(f"/proc/{pid}/cmdline") for pid in group_pids(server_pid)) if s is not None]
        regions = [stub.region_path for stub in stubs]
        assert len(regions) >= 2 and all(os.path.exists(region) for region in regions)
        connection = None
        if client:
            connection = http.client.HTTPConnection("127.0.0.1", serve.http, timeout=30)
            connection.request("GET", "/v2/health/ready")
            assert connection.getresponse().read() == b""  # answered; the connection stays open
        started = time.monotonic()
        assert serve.stop() == 0
        elapsed = time.monotonic() - started
        if connection is not None:
            connection.close()
    finally:
        serve.stop()
    assert "tritonserver stopped." in serve.output()
    assert group_pids(server_pid) == []
    assert [region for region in regions if os.path.exists(region)] == []
    assert elapsed < 12, f"Ctrl+C took {elapsed:.1f} s"
