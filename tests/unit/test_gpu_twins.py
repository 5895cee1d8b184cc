"""bench/gpu.py's hand-written twins answer as their generated models do, so its ratios compare the same work.

Each twin's ``model.py`` (bench/handwritten/Gpu*) runs on the backend shim with torch's CPU build, under its
generated model's config as bench/gpu.py serves it, on device "cpu" (what a twin picks for a ``KIND_CPU``
instance, as NVIDIA's handler does); the generated model runs through ``Repository.local()``. Batches of one and
of three requests of different sizes; the token streams request by request. The twins' GPU ways (pinned memory,
non-blocking copies, waits, ``from_dlpack`` of device tensors) are only exercised on a GPU (bench/gpu.py).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from general_path import forget, load_module, pb
from google.protobuf import json_format
from torch_cpu import torch  # noqa: F401  (a failure naming `make frameworks` where it is missing)

from repogen.emit.model_config import model_config

ROOT = Path(__file__).resolve().parents[2]
TWINS = ROOT / "bench" / "handwritten"


def _app() -> Any:
    spec = importlib.util.spec_from_file_location("repogen_bench_gpu_app", ROOT / "bench" / "apps" / "gpu_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APP = _app()
LOCAL = APP.models.local()


class Copying(pb.ResponseSender):
    """A sender that keeps what each response held when it was sent, as the stub's ``send`` copies it."""

    def send(self, response: Any = None, flags: int = 0) -> None:
        if response is not None:
            tensors = [pb.Tensor(t.name(), np.array(t.as_numpy(), copy=True)) for t in response.output_tensors()]
            response = pb.InferenceResponse(output_tensors=tensors)
        super().send(response, flags)


@pytest.fixture(autouse=True)
def input_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """python_backend's ``get_input_tensor_by_name``, which hand-written models read with (the runtime does not)."""

    def get_input_tensor_by_name(request: Any, name: str) -> Any:
        return next((t for t in request.inputs() if t.name() == name), None)

    monkeypatch.setattr(pb, "get_input_tensor_by_name", get_input_tensor_by_name, raising=False)


def twin(generated: str, name: str) -> Any:
    """The twin ``name`` initialized for a CPU instance under ``generated``'s config (its name changed)."""
    proto = model_config(LOCAL.spec.model(generated))
    config = json.loads(json_format.MessageToJson(proto, preserving_proto_field_name=True))
    config["name"] = name
    module = load_module(TWINS / name / "1" / "model.py", f"twin_{name}")
    forget(f"twin_{name}")
    model = module.TritonPythonModel()
    model.initialize({
        "model_config": json.dumps(config), "model_name": name, "model_version": "1",
        "model_repository": str(TWINS / name), "model_instance_name": f"{name}_0_0",
        "model_instance_kind": "CPU", "model_instance_device_id": "0",
    })  # fmt: skip
    return model


def answers(response: Any) -> dict[str, np.ndarray]:
    assert not response.has_error(), response.error().message()
    return {t.name(): np.array(t.as_numpy(), copy=True) for t in response.output_tensors()}


def close(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys()
    for name, value in want.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)


BATCHED = [
    ("GpuTorch", "GpuTorchNV", "x", (256,)), ("GpuTorch", "GpuTorchBP", "x", (256,)),
    ("GpuNumpy", "GpuNumpyHW", "x", (256,)),
    ("GpuImage", "GpuImageNV", "image", (3, 224, 224)), ("GpuImage", "GpuImageBP", "image", (3, 224, 224)),
]  # fmt: skip


@pytest.mark.parametrize(("generated", "name", "input_name", "shape"), BATCHED, ids=[b[1] for b in BATCHED])
def test_batched_twin_answers_as_generated(generated: str, name: str, input_name: str, shape: tuple[int, ...]) -> None:
    model = twin(generated, name)
    rng = np.random.default_rng(0)
    for sizes in ((1,), (2, 1, 3), (4,)):  # the twin's buffers reused from one batch to the next
        arrays = [rng.standard_normal((rows, *shape), dtype=np.float32) for rows in sizes]
        responses = model.execute([pb.InferenceRequest([pb.Tensor(input_name, a)]) for a in arrays])
        assert len(responses) == len(arrays)
        for array, response in zip(arrays, responses, strict=True):
            close(answers(response), LOCAL.infer(generated, {input_name: array}))


@pytest.mark.parametrize("name", ["GpuTokensNV", "GpuTokensBP"])
def test_token_twin_streams_as_generated(name: str) -> None:
    model = twin("GpuTokens", name)
    rng = np.random.default_rng(1)
    prompts = [rng.standard_normal(APP.WIDTH, dtype=np.float32) for _ in range(2)]
    requests = [pb.InferenceRequest([pb.Tensor("prompt", p)]) for p in prompts]
    for request in requests:
        request.sender = Copying()
    assert model.execute(requests) is None
    for prompt, request in zip(prompts, requests, strict=True):
        sent = [request.sender.queue.get_nowait() for _ in range(request.sender.queue.qsize())]
        assert [flags for _, flags in sent] == [0] * APP.TOKENS + [pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL]
        got = [answers(response) for response, _ in sent[:-1]]
        want = list(LOCAL.stream("GpuTokens", {"prompt": prompt}))
        assert len(want) == APP.TOKENS
        for one, other in zip(got, want, strict=True):
            close(one, other)
        assert len({int(one["token"][0]) for one in got}) > 1  # tokens that differ: a wrong copy would show
