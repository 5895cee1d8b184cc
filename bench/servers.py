"""The two servers of a benchmark run: repogen's stock tritonserver and PyTriton's.

Both are the same tritonserver 2.51.0 binary (PyTriton 0.7.0 runs the one inside its own wheel;
repogen runs the one extracted from that same wheel, its models on Python 3.10 like NGC 24.10).
Each is started in its own session so stopping it takes its backend stubs (and PyTriton's proxy
processes) with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import tritonclient.http as httpclient

from repogen.server import TritonServer, ensure_server, ensure_server_venv
from repogen.server.provision.install import venv_info
from repogen.server.provision.pythons import require_python
from repogen.server.running.process import free_ports
from repogen.triton.releases import get_release

RELEASE = get_release("24.10")  # tritonserver 2.51.0, models on Python 3.10

BENCH = Path(__file__).resolve().parent
PYTRITON_VENV = BENCH / ".venv-pytriton"


def repogen_server(repository: Path, log_path: Path, extra_args: tuple[str, ...] = ()) -> TritonServer:
    """An unstarted stock tritonserver 2.51 serving ``repository`` from a numpy-only Python 3.10 venv."""
    venv = ensure_server_venv(python=require_python(RELEASE.python), numpy=RELEASE.numpy)
    return TritonServer(repository, ensure_server(RELEASE), venv, log_path=log_path, extra_args=extra_args)


def wait_model_ready(url: str, model: str, timeout: float, poll: float = 0.05) -> float:
    """Seconds until ``model`` on the HTTP endpoint ``url`` is ready; TimeoutError after ``timeout``."""
    began = time.monotonic()
    client = httpclient.InferenceServerClient(url)
    try:
        while time.monotonic() - began < timeout:
            with contextlib.suppress(Exception):
                if client.is_model_ready(model):
                    return time.monotonic() - began
            time.sleep(poll)
    finally:
        client.close()
    raise TimeoutError(f"{model} at {url} not ready after {timeout:.0f} s")


class PyTritonServer:
    """``bench/pytriton_app.py`` in the PyTriton venv, bound to 127.0.0.1."""

    def __init__(self, log_path: Path) -> None:
        self.http_port, self.grpc_port, self.metrics_port = free_ports(3)
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self, timeout: float = 180.0) -> PyTritonServer:
        python = PYTRITON_VENV / "bin" / "python"
        if not python.exists():
            raise FileNotFoundError(f"{python} missing: run `make bench` (it creates the PyTriton venv)")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        # The backend stub links the system libpython; the venv's own (pyenv) one must win (DESIGN.md).
        libdir = venv_info(PYTRITON_VENV).libdir
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (libdir, env.get("LD_LIBRARY_PATH", "")) if p)
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            [str(python), str(BENCH / "pytriton_app.py"), str(self.http_port), str(self.grpc_port),
             str(self.metrics_port)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        try:
            wait_model_ready(self.http_url, "Double", timeout)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"PyTriton did not become ready; log: {self.log_path}") from None
        return self

    @property
    def group(self) -> int:
        """The process group of PyTriton's app, its tritonserver and its stubs (started in a session of their own)."""
        assert self._proc is not None, "not started"
        return self._proc.pid

    def stop(self, timeout: float = 30.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # its tritonserver and stubs share the session's group
        proc.wait()
        self._proc = None
