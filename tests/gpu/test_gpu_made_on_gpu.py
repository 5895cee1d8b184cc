"""Models made on a GPU at bind time (tests/apps/gpu/made_on_gpu.py, built on the GPU machine): PyTriton's
``multi_instance_resnet50_pytorch`` way (``.half().to("cuda")``) and its binding docs' ``devices=["cuda", "cpu"]``,
served on a KIND_GPU instance and a KIND_CPU one, each with its tensors where its instance runs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer

APP = "tests/apps/gpu/made_on_gpu.py:models"
X = np.arange(8, dtype=np.float32).reshape(2, 4)


@pytest.fixture(scope="module")
def built(gpu_build) -> Path:
    return gpu_build(APP)


@pytest.fixture(scope="module")
def server(built, gpu_serve):
    return gpu_serve(built)


def _expected(seed: int, half: bool = False) -> np.ndarray:
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 2)
    if half:  # the GPU computes in half precision: compare with the half weights, in float32
        model = model.half().float()
    return model(torch.from_numpy(X)).detach().numpy()


def _config(built: Path, model: str) -> str:
    return (built / model / "config.pbtxt").read_text()


def test_the_build_put_the_gpu_callables_on_the_gpu_it_used(built):
    assert 'name: "HalfOnGpu_0"\n  count: 1\n  gpus: 0\n  kind: KIND_GPU' in _config(built, "HalfOnGpu")
    pair = _config(built, "CudaAndCpu")
    assert 'name: "CudaAndCpu_0"\n  count: 1\n  gpus: 0\n  kind: KIND_GPU' in pair
    assert 'name: "CudaAndCpu_1"\n  count: 1\n  kind: KIND_CPU' in pair
    assert "KIND_GPU" not in _config(built, "MadeOnGpuRunOnCpu")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_half_model_made_on_the_gpu_serves_there(server, protocol):
    out = infer(protocol, server, "HalfOnGpu", {"x": X})
    np.testing.assert_allclose(out["y"], _expected(0, half=True), rtol=2e-2, atol=2e-2)
    assert out["device"].tolist() == [[b"cuda:0"]] * 2
    assert out["parameter"].tolist() == [[1]] * 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cuda_and_cpu_callables_each_serve_where_their_tensors_are(server, protocol):
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: infer(protocol, server, "CudaAndCpu", {"x": X}), range(64)))
    by_device = {}
    for answer in answers:
        by_device.setdefault(answer["device"][0][0], answer["y"])
        assert answer["parameter"].tolist() == [[1]] * 2
    assert set(by_device) == {b"cuda:0", b"cpu"}
    np.testing.assert_allclose(by_device[b"cuda:0"], _expected(0), rtol=1e-3, atol=1e-3)  # callable 0, made on cuda
    np.testing.assert_allclose(by_device[b"cpu"], _expected(1), rtol=1e-5, atol=1e-5)  # callable 1, made on the CPU


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_model_made_on_the_gpu_told_to_run_on_the_cpu_loads_there(server, protocol):
    out = infer(protocol, server, "MadeOnGpuRunOnCpu", {"x": X})
    np.testing.assert_allclose(out["y"], _expected(0), rtol=1e-5, atol=1e-5)
    assert out["device"].tolist() == [[b"cpu"]] * 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_on_a_second_gpu_the_tensors_land_on_gpu_1(server, gpus, protocol):
    if len(gpus) < 2:
        pytest.skip(f"gpus=[1] needs a second GPU; this machine has {len(gpus)} ({'; '.join(gpus)})")
    for model in ("MadeOnGpu0ServedOnGpu1", "MadeOnGpu1"):
        out = infer(protocol, server, model, {"x": X})
        np.testing.assert_allclose(out["y"], _expected(0), rtol=1e-3, atol=1e-3)
        assert out["device"].tolist() == [[b"cuda:1"]] * 2, model


def test_made_on_gpu_1_is_served_from_gpu_1(built, gpus):
    if len(gpus) < 2:
        pytest.skip(f"a model made on cuda:1 needs a second GPU; this machine has {len(gpus)} ({'; '.join(gpus)})")
    assert 'name: "MadeOnGpu1_0"\n  count: 1\n  gpus: 1\n  kind: KIND_GPU' in _config(built, "MadeOnGpu1")
