"""tests/gpu: GPU tensors end to end on a real NVIDIA GPU and the stock tritonserver (``make test-gpu``).

The apps are built with the CLI for the newest NGC release of the frameworks' CUDA major (26.11 for CUDA 13,
25.07 for CUDA 12; Python 3.12), with torch, cupy and onnxruntime ``--provided``: they come from the server's
environment, a venv of the container's Python whose numpy is 1.26.4, as NGC's is, with the frameworks beside
it. ``REPOGEN_GPU_SERVER_VENV`` names that venv (tests/gpu/device.sh makes one on the GPU machine; the
frameworks' venv with a ``.pth`` that puts numpy 1.26.4 first will do). The server is the PyPI wheel's 2.51.0,
a CUDA build, with the stub for that venv's Python. On a machine without a GPU every test here is collected
and skipped, saying so: CI has none.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from repogen.server.provision.install import ensure_server, venv_info
from repogen.server.running.process import TritonServer
from repogen.testing.gpu import build_arguments, gpu_names

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GPU_VENV = "REPOGEN_GPU_SERVER_VENV"
RELEASE = os.environ.get("REPOGEN_TRITON_RELEASE") or os.environ.get("REPOGEN_TRITON_VERSION") or "2.51.0"
NO_GPU = "no NVIDIA GPU on this machine (nvidia-smi lists none): tests/gpu runs on a GPU machine (make test-gpu)"


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

    def build(app: str, *extra: str) -> Path:
        out = tmp_path_factory.mktemp("gpu-build") / "repo"
        command = [sys.executable, "-m", "repogen", "build", app, "-o", str(out), *build_arguments(), *extra]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return out

    return build


@pytest.fixture(scope="module")
def gpu_serve(gpu_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., TritonServer]]:
    """``gpu_serve(repo, venv=None)``: a ready server of ``repo`` on the GPU, stopped after the module."""
    servers: list[TritonServer] = []
    install = ensure_server(RELEASE)

    def start(repository: Path, venv: Path | None = None, **options: object) -> TritonServer:
        log = tmp_path_factory.mktemp("gpu-server") / "tritonserver.log"
        server = TritonServer(repository, install, venv_info(venv or gpu_venv), log_path=log, **options)
        servers.append(server)
        server.start()
        server.wait_ready(240)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
