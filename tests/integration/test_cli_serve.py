"""`repogen serve` + `repogen infer` as a user runs them: subprocesses, real tritonserver, ^C.

Serve the built quickstart, wait for the "ready" line, query it with `repogen infer` over HTTP
and gRPC and with the printed curl request, then SIGINT: the serve process, tritonserver and
every backend stub must be gone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogen.server.process import free_ports, pid_alive
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    """`repogen serve` in a subprocess; its stdout is collected by a thread so it never blocks."""

    def __init__(self, repo: Path, env: dict[str, str], version: str, python: str) -> None:
        self.http, self.grpc, self.metrics = free_ports(3)
        self.release, self.python = version, python
        cmd = [
            sys.executable, "-m", "repogen", "serve", str(repo), "--triton-version", version, "--server-python", python,
            "--http-port", str(self.http), "--grpc-port", str(self.grpc), "--metrics-port", str(self.metrics),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 180.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines[-80:]))

    def output(self) -> str:
        return "\n".join(self.lines)


def _group(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def quickstart_repo(cli_build: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("serve") / "repo"
    cli_build("examples/quickstart/app.py:models", repo)  # type: ignore[operator]
    return repo


@pytest.fixture
def served(quickstart_repo: Path, triton_install: TritonInstallation) -> Iterator[ServeProcess]:
    """A `repogen serve` of the pairing under test, reusing the test cache (triton_install installed it)."""
    env = dict(os.environ)
    env.setdefault("REPOGEN_CACHE_DIR", str(ROOT / ".cache"))
    release, python = triton_install.install.release.tritonserver, triton_install.venv.python_version
    serve = ServeProcess(quickstart_repo, env, release, python)
    try:
        yield serve
    finally:
        if serve.proc.poll() is None:
            serve.proc.send_signal(signal.SIGINT)
            try:
                serve.proc.wait(60)
            except subprocess.TimeoutExpired:
                serve.proc.kill()
                serve.proc.wait()


def _infer(serve: ServeProcess, protocol: str, *args: str) -> subprocess.CompletedProcess[str]:
    port = serve.http if protocol == "http" else serve.grpc
    cmd = [sys.executable, "-m", "repogen", "infer", "AddSub", "--input", "a=[[1,2]]", "--input", "b=[[3,4]]"]
    return subprocess.run(
        [*cmd, "--url", f"127.0.0.1:{port}", "--protocol", protocol, *args], capture_output=True, text=True, timeout=60
    )


def test_serve_infer_and_stop_on_sigint(served: ServeProcess) -> None:
    ready = served.wait_for(r"ready \(pid (\d+)\)")
    server_pid = int(ready[1])
    assert pid_alive(server_pid)
    stubs = [p for p in _group(server_pid) if p != server_pid]
    assert len(stubs) >= 2  # one stub per model instance, in the server's process group
    out = served.output()
    assert f"Serving with tritonserver {served.release} + Python {served.python} (" in out
    assert f"http://127.0.0.1:{served.http}" in out and f"127.0.0.1:{served.grpc}" in out
    assert "AddSub, Shout" in out

    for protocol in ("http", "grpc"):
        result = _infer(served, protocol)
        assert result.returncode == 0, result.stderr
        assert "add  FP32  shape [1, 2]" in result.stdout and "[[4., 6.]]" in result.stdout
        assert "[[-2., -2.]]" in result.stdout
        result = _infer(served, protocol, "--json")
        outputs = {o["name"]: o["data"] for o in json.loads(result.stdout)["outputs"]}
        assert outputs == {"add": [[4.0, 6.0]], "sub": [[-2.0, -2.0]]}

    # The printed curl is a real request: send its body.
    curl = served.wait_for(r"^\s+(curl -s \S+/v2/models/AddSub/infer -d .*)$")[1]
    argv = shlex.split(curl)
    body = argv[argv.index("-d") + 1].encode()
    with urllib.request.urlopen(urllib.request.Request(f"http://{argv[2]}", data=body), timeout=30) as response:
        reply = json.loads(response.read())
    assert {o["name"]: o["data"] for o in reply["outputs"]} == {"add": [2.0], "sub": [0.0]}

    # The server log streams to stdout.
    assert any("successfully loaded 'AddSub'" in line for line in served.lines)

    served.proc.send_signal(signal.SIGINT)
    assert served.proc.wait(60) == 0
    served.wait_for(r"tritonserver stopped\.")
    assert not pid_alive(server_pid)
    assert _group(server_pid) == []
    assert not any(pid_alive(p) for p in stubs)


def test_serve_stops_on_sigterm(served: ServeProcess) -> None:
    server_pid = int(served.wait_for(r"ready \(pid (\d+)\)")[1])
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(60) == 0
    assert _group(server_pid) == [] and not pid_alive(server_pid)


def test_infer_names_a_missing_model_and_input(served: ServeProcess) -> None:
    served.wait_for(r"ready \(pid \d+\)")
    cmd = [sys.executable, "-m", "repogen", "infer", "--url", f"127.0.0.1:{served.http}"]
    result = subprocess.run([*cmd, "Nope", "-i", "a=1"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "model 'Nope' is not available" in result.stderr and "served models: AddSub, Shout" in result.stderr
    result = subprocess.run([*cmd, "AddSub", "-i", "a=1"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "needs input(s) b" in result.stderr
