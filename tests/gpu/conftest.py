"""tests/gpu: GPU tensors end to end on a real NVIDIA GPU and the stock tritonserver (``make test-gpu``).

The apps are built with the CLI for the newest NGC release of the frameworks' CUDA major (26.11 for CUDA 13,
25.07 for CUDA 12; Python 3.12), with torch, cupy and onnxruntime ``--provided``: they come from the server's
environment, a venv of the container's Python whose numpy is 1.26.4, as NGC's is, with the frameworks beside
it. ``REPOGEN_GPU_SERVER_VENV`` names that venv (tests/gpu/device.sh makes one on the GPU machine; the
frameworks' venv with a ``.pth`` that puts numpy 1.26.4 first will do). The server is the PyPI wheel's 2.51.0,
a CUDA build, with the stub for that venv's Python. On a machine without a GPU every test here is collected
and skipped, saying so: CI has none.

Made for one device call that may be cut short (tests/gpu/device.sh): each test's result is written as it comes
(``$REPOGEN_GPU_RESULTS``, JSON lines), SIGTERM (a ``timeout``) interrupts the session so that its teardown stops
the servers, each server's pid is noted for device.sh to stop what is left, and a model that fails to load fails
its own tests only (the servers run with ``--exit-on-error=false``).
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from repogen.server.provision.install import ensure_server, venv_info
from repogen.server.running.process import TritonServer
from repogen.testing.gpu import build, gpu_names, record_server

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GPU_VENV = "REPOGEN_GPU_SERVER_VENV"
RELEASE = os.environ.get("REPOGEN_TRITON_RELEASE") or os.environ.get("REPOGEN_TRITON_VERSION") or "2.51.0"
RESULTS = "REPOGEN_GPU_RESULTS"
# One model that fails to load must not take the server, and every test sharing it, down with it.
LENIENT = ["--exit-on-error=false", "--strict-readiness=false"]
# python_backend's warnings when a GPU tensor does not fit the server's CUDA memory pool ("... will use CUDA IPC for
# GPU output transfer", "... Will use CUDA IPC."): each such buffer then costs an uncached cudaIpcOpenMemHandle.
CUDA_IPC = "use cuda ipc"
NO_GPU = "no NVIDIA GPU on this machine (nvidia-smi lists none): tests/gpu runs on a GPU machine (make test-gpu)"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # pytest then tears its fixtures (the servers) down and reports


def pytest_configure(config: pytest.Config) -> None:
    signal.signal(signal.SIGTERM, _interrupt)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each phase's result as one JSON line in ``$REPOGEN_GPU_RESULTS``, written when it is known."""
    path = os.environ.get(RESULTS)
    if not path or (report.when != "call" and report.passed):
        return
    line = {"test": report.nodeid, "when": report.when, "outcome": report.outcome,
            "seconds": round(report.duration, 3)}  # fmt: skip
    if report.skipped and isinstance(report.longrepr, tuple):
        line["reason"] = str(report.longrepr[2])
    elif report.failed:
        line["error"] = str(report.longrepr)[-3000:]
    with open(path, "a", encoding="utf-8") as results:
        results.write(json.dumps(line) + "\n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpus = None
    for item in items:
        if HERE not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.gpu)
        item.add_marker(pytest.mark.integration)
        gpus = gpu_names() if gpus is None else gpus
        if not gpus:
            item.add_marker(pytest.mark.skip(reason=NO_GPU))


@pytest.fixture(scope="session")
def gpus() -> list[str]:
    return gpu_names()


@pytest.fixture(scope="session")
def gpu_venv() -> Path:
    """The server's Python: numpy 1.26.4 and the frameworks (``REPOGEN_GPU_SERVER_VENV``)."""
    path = os.environ.get(GPU_VENV)
    if not path:
        pytest.fail(
            f"{GPU_VENV} is not set: name a venv of Python 3.12 with numpy 1.26.4, torch and cupy (tests/gpu/device.sh "
            "makes one; `make test-gpu` too)"
        )
    return Path(path)


@pytest.fixture(scope="session")
def gpu_build(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``gpu_build(app)``: the repository ``repogen build`` makes of ``app`` for the GPU suite."""

    def make(app: str, *extra: str) -> Path:
        out = tmp_path_factory.mktemp("gpu-build") / "repo"
        done = build(app, out, ROOT, *extra)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(done.args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return out

    return make


@pytest.fixture(scope="module")
def gpu_serve(gpu_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., TritonServer]]:
    """``gpu_serve(repo, venv=None)``: a live server of ``repo`` on the GPU, stopped after the module.

    Its models that failed to load are UNAVAILABLE, said by ``test_every_model_is_ready`` and their own tests. A
    server whose log says a GPU transfer fell back to CUDA IPC fails the module (at its last test's teardown)."""
    servers: list[TritonServer] = []
    install = ensure_server(RELEASE)

    def start(repository: Path, venv: Path | None = None, **options: object) -> TritonServer:
        log = tmp_path_factory.mktemp("gpu-server") / "tritonserver.log"
        extra = [*LENIENT, *options.pop("extra_args", [])]  # type: ignore[misc]
        server = TritonServer(
            repository, install, venv_info(venv or gpu_venv), log_path=log, extra_args=extra, **options
        )
        servers.append(server)
        server.start()
        record_server(server, "suite")
        server.wait_ready(100)  # within the suite's budget in device.sh
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
    fallbacks = [line for server in servers for line in server.log_text().splitlines() if CUDA_IPC in line.lower()]
    if fallbacks:  # a transfer the CUDA pool could not hold: the pool is sized, or the outputs routed, wrongly
        pytest.fail("the server fell back to CUDA IPC for a GPU transfer:\n" + "\n".join(fallbacks[:10]))
