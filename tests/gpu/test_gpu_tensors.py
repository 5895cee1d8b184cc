"""GPU tensors end to end: tests/apps/gpu built with the CLI, served on the GPU, asked over HTTP and gRPC."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer, stream

APP = "tests/apps/gpu/app.py:models"
MODELS = (
    "Caller", "Consume", "Half", "Keep", "Linear", "NumpyCaller", "OnGpu", "OnGpuFused", "Produce", "Scale", "Tokens",
    "TorchCast", "TorchIn", "TorchOut",
)  # fmt: skip


@pytest.fixture(scope="module")
def server(gpu_build, gpu_serve):
    return gpu_serve(gpu_build(APP))


def _f32(*rows: float) -> np.ndarray:
    return np.array([[v] for v in rows], dtype=np.float32)


def test_every_model_is_ready(server):
    states = {m["name"]: m.get("state") for m in server.models_status()}
    assert {name: states.get(name) for name in MODELS} == dict.fromkeys(MODELS, "READY")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_pytritons_example_serves_on_the_gpu_and_the_cpu_instance(server, protocol):
    import torch

    torch.manual_seed(0)
    reference = torch.nn.Linear(4, 2)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: infer(protocol, server, "Linear", {"x": x}), range(16)))
    expected = reference(torch.from_numpy(x)).detach().numpy()
    for answer in answers:
        np.testing.assert_allclose(answer["y"], expected, rtol=1e-4, atol=1e-5)
    assert {row[0] for a in answers for row in a["device"].tolist()} == {b"cuda:0", b"cpu"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("model", "factor"), [("TorchOut", 3), ("TorchCast", 1)])
def test_gpu_outputs_are_sent_from_the_gpu(server, protocol, model, factor):
    assert infer(protocol, server, model, {"x": _f32(1, 2)})["y"].tolist() == [[factor], [2 * factor]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("model", "y"), [("TorchIn", [[2], [3]]), ("Scale", [[2], [4]])])
def test_inputs_arrive_on_the_gpu_where_asked(server, protocol, model, y):
    out = infer(protocol, server, model, {"x": _f32(1, 2)})
    assert (out["y"].tolist(), out["on_gpu"].tolist()) == (y, [[1], [1]])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_ensemble_hands_the_gpu_tensor_on(server, protocol):
    """Consume is handed device memory by python_backend: the tensor did not go through the host on the way."""
    out = infer(protocol, server, "OnGpu", {"x": _f32(1, 2)})
    assert (out["y"].tolist(), out["on_gpu"].tolist(), out["handed_on_gpu"].tolist()) == (
        [[12], [14]], [[1], [1]], [[1], [1]],
    )  # fmt: skip


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fused_step_gets_the_memory_the_step_before_made(server, protocol):
    out = infer(protocol, server, "OnGpuFused", {"x": _f32(1, 2)})
    assert (out["y"].tolist(), out["on_gpu"].tolist(), out["same_storage"].tolist()) == (
        [[12], [14]], [[1], [1]], [[1], [1]],
    )  # fmt: skip


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bls_sends_and_receives_gpu_tensors(server, protocol):
    out = infer(protocol, server, "Caller", {"x": _f32(1, 2)})
    assert out["y"].tolist() == [[12], [14]]
    assert (out["on_gpu"].tolist(), out["handed_on_gpu"].tolist(), out["back_on_gpu"].tolist()) == (
        [[1], [1]], [[1], [1]], [[1], [1]],
    )  # fmt: skip
    assert infer(protocol, server, "NumpyCaller", {"x": _f32(1, 2)})["y"].tolist() == [[2], [4]]


def test_a_decoupled_model_streams_gpu_tensors(server):
    responses = stream(server, "Tokens", {"n": np.array([3], dtype=np.int32)})
    assert [r["token"].tolist() for r in responses] == [[0, 0], [1, 1], [2, 4]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bf16_in_and_out(server, protocol):
    import ml_dtypes  # tritonclient's BF16: numpy has none

    h = np.array([[1, 2, 3], [4, 5, 0.5]], dtype=ml_dtypes.bfloat16)
    out = infer(protocol, server, "Half", {"h": h})["h"]
    assert out.dtype == ml_dtypes.bfloat16 and out.astype(np.float32).tolist() == [[2, 4, 6], [8, 10, 1]]
