"""Where a GPU model runs: a second GPU, numpy 2 in the server's Python, ONNX on a KIND_GPU instance."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from repogen.server.provision.install import ensure_server_venv
from repogen.testing.client import PROTOCOLS, infer


@pytest.fixture(scope="module")
def second_gpu(gpus, gpu_build, gpu_serve):
    if len(gpus) < 2:
        pytest.skip(f"gpus=[1] needs a second GPU; this machine has {len(gpus)} ({'; '.join(gpus)})")
    return gpu_serve(gpu_build("tests/apps/gpu/second_gpu.py:models"))


@pytest.fixture(scope="module")
def onnx_server(gpu_build, gpu_serve):
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.fail("the GPU suite's Python needs onnxruntime (the GPU machine's image has it)")
    return gpu_serve(gpu_build("tests/apps/gpu/onnx_app.py:models"))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gpus_1_puts_the_work_on_gpu_1(second_gpu, protocol):
    server = second_gpu
    where = infer(protocol, server, "Where", {"x": np.zeros((1, 1), dtype=np.float32)})["where"]
    assert where.tolist() == [[b"cuda:1", b"1", b"cuda:1"]]


def _numpy2_venv(repogen_cache_dir: Path) -> Path:
    """This process's venv where its numpy is 2 (the GPU machine's framework venv), else one made with numpy 2."""
    import numpy

    if int(numpy.__version__.split(".")[0]) >= 2:
        return Path(sys.prefix)
    return ensure_server_venv(python=sys.executable, numpy="2.2.6", cache_dir=repogen_cache_dir)


def test_numpy_2_beside_the_stub_is_refused_at_load(gpu_build, gpu_serve, repogen_cache_dir):
    venv = _numpy2_venv(repogen_cache_dir)
    repo = gpu_build("examples/quickstart/app.py:models")
    server = gpu_serve(repo, venv)  # a model that fails to load leaves the server up (conftest's LENIENT)
    for model in server.models_status():
        assert model.get("state") == "UNAVAILABLE"
        assert f"model '{model['name']}' cannot serve with numpy 2." in model.get("reason", "")
        assert "is built for numpy 1 (as NGC 23.10-24.10's are)" in model.get("reason", "")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_onnx_on_a_gpu_instance_runs_or_says_why_not(onnx_server, protocol):
    import onnxruntime

    server = onnx_server
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    assert infer(protocol, server, "Double", {"x": x})["y"].tolist() == [[2.0, 4.0]]
    fallback = "runs its graph on the CPU: the onnxruntime" in server.log_text()
    assert fallback == ("CUDAExecutionProvider" not in onnxruntime.get_available_providers())
