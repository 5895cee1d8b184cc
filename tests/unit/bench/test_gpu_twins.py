"""bench/gpu.py's hand-written twins answer as their generated models do, so its ratios compare the same work.

Each twin's ``model.py`` (bench/handwritten/Gpu*) runs on the backend shim with torch's CPU build, under its
generated model's config as bench/gpu.py serves it, on device "cpu" (what a twin picks for a ``KIND_CPU``
instance, as NVIDIA's handler does); the generated model runs through ``Repository.local()``. Batches of one and
of three requests of different sizes; the token streams request by request. The twins' GPU ways (pinned memory,
non-blocking copies, waits, ``from_dlpack`` of device tensors) run on the emulated GPU (repogen.testing.emulated_gpu)
beside the generated ``model.py`` on a KIND_GPU instance (devices 0 and 1), batches of 1, 4 and 16 requests, each
answer taken as a network client reads it (the server fetching GPU outputs from the stub), and on a GPU in
bench/gpu.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from general_path import forget, load_module, pb
from google.protobuf import json_format
from torch_cpu import torch  # noqa: F401  (a failure naming `make frameworks` where it is missing)

from repogen.emit.model_config import model_config
from repogen.testing.emulated_gpu import emulated

ROOT = Path(__file__).resolve().parents[3]
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


def twin(generated: str, name: str, kind: str = "CPU", device: int = 0) -> Any:
    """The twin ``name`` initialized for an instance of ``kind`` under ``generated``'s config (its name changed)."""
    proto = model_config(LOCAL.spec.model(generated))
    config = json.loads(json_format.MessageToJson(proto, preserving_proto_field_name=True))
    config["name"] = name
    module = load_module(TWINS / name / "1" / "model.py", f"twin_{name}")
    forget(f"twin_{name}")
    model = module.TritonPythonModel()
    model.initialize({
        "model_config": json.dumps(config), "model_name": name, "model_version": "1",
        "model_repository": str(TWINS / name), "model_instance_name": f"{name}_0_0",
        "model_instance_kind": kind, "model_instance_device_id": str(device),
    })  # fmt: skip
    return model


def streamed(model: Any, request: Any) -> list[tuple[Any, int]]:
    """Every response of ``request``'s stream with its flags, up to the final one: the twins' ``execute`` is a
    coroutine (run here as the stub's event loop would), the generated model's calls run on its own loop."""
    returned = model.execute([request])
    if inspect.iscoroutine(returned):
        returned = asyncio.run(returned)
    assert returned is None
    sent: list[tuple[Any, int]] = []
    while not sent or not sent[-1][1] & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
        sent.append(request.sender.queue.get(timeout=30))
    return sent


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
    for prompt in prompts:
        request = pb.InferenceRequest([pb.Tensor("prompt", prompt)])
        request.sender = Copying()
        sent = streamed(model, request)
        assert [flags for _, flags in sent] == [0] * APP.TOKENS + [pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL]
        got = [answers(response) for response, _ in sent[:-1]]
        want = list(LOCAL.stream("GpuTokens", {"prompt": prompt}))
        assert len(want) == APP.TOKENS
        for one, other in zip(got, want, strict=True):
            close(one, other)
        assert len({int(one["token"][0]) for one in got}) > 1  # tokens that differ: a wrong copy would show


# -- on the emulated GPU: the generated model.py on KIND_GPU beside each twin ------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from repogen.build import build_repository
    from repogen.packages.options import PackageOptions

    out = tmp_path_factory.mktemp("gpu-app") / "repo"
    build_repository(APP.models, out, packages=PackageOptions(mode="record"))
    return out


def generated_on(built: Path, name: str, device: int) -> Any:
    """The generated ``model.py`` of ``name`` initialized for a KIND_GPU instance on ``device``."""
    module = load_module(built / name / "1" / "model.py", f"generated_{name}")
    forget(f"generated_{name}")
    model = module.TritonPythonModel()
    config = json_format.MessageToJson(model_config(LOCAL.spec.model(name)), preserving_proto_field_name=True)
    model.initialize({
        "model_config": config, "model_name": name, "model_version": "1", "model_repository": str(built / name),
        "model_instance_name": f"{name}_0_0", "model_instance_kind": "GPU", "model_instance_device_id": str(device),
    })  # fmt: skip
    return model


def delivered(responses: list[Any]) -> list[dict[str, np.ndarray]]:
    return [answers(response) for response in pb.deliver(responses)]


@pytest.mark.parametrize("device", [0, 1])
@pytest.mark.parametrize(("generated", "name", "input_name", "shape"), BATCHED, ids=[b[1] for b in BATCHED])
def test_on_an_emulated_gpu_the_twins_answer_as_the_generated_model(
    built: Path, generated: str, name: str, input_name: str, shape: tuple[int, ...], device: int
) -> None:
    rng = np.random.default_rng(device)
    with emulated() as gpu:
        made, hand = generated_on(built, generated, device), twin(generated, name, "GPU", device)
        for count in (1, 4, 16):
            rows = [1 + (i % 3) for i in range(count)] if shape == (256,) else [1] * count
            arrays = [rng.standard_normal((r, *shape), dtype=np.float32) for r in rows]
            requests = [pb.InferenceRequest([pb.Tensor(input_name, a)]) for a in arrays]
            for mine, theirs in zip(delivered(made.execute(requests)), delivered(hand.execute(requests)), strict=True):
                close(mine, theirs)
                assert all(np.isfinite(v).all() for v in mine.values())
        assert gpu.devices[device].allocated > 0 and not gpu.devices[1 - device].allocated  # on its own GPU


@pytest.mark.parametrize("name", ["GpuTokensNV", "GpuTokensBP"])
def test_on_an_emulated_gpu_the_token_twins_stream_as_the_generated_model(built: Path, name: str) -> None:
    rng = np.random.default_rng(2)
    prompt = rng.standard_normal(APP.WIDTH, dtype=np.float32)
    streams = []
    with emulated():
        for model in (generated_on(built, "GpuTokens", 1), twin("GpuTokens", name, "GPU", 1)):
            streams.append(streamed(model, pb.InferenceRequest([pb.Tensor("prompt", prompt)])))
    mine, theirs = streams
    assert [flags for _, flags in mine] == [flags for _, flags in theirs]
    for (one, _), (other, _) in zip(mine[:-1], theirs[:-1], strict=True):
        close(answers(one), answers(other))


def test_on_an_emulated_gpu_the_host_token_stream_streams_as_the_generated_model(built: Path) -> None:
    """bench/gpu.py's ``GpuTokensHost`` (each token taken to host memory by the callable) makes GpuTokens' tokens."""
    prompt = np.random.default_rng(4).standard_normal(APP.WIDTH, dtype=np.float32)
    with emulated() as gpu:
        streams = [streamed(generated_on(built, name, 0), pb.InferenceRequest([pb.Tensor("prompt", prompt)]))
                   for name in ("GpuTokens", "GpuTokensHost")]  # fmt: skip
        assert gpu.counts["d2h blocking"] >= APP.TOKENS  # the host stream's own copies
    mine, host = ([answers(response)["token"] for response, _ in sent[:-1]] for sent in streams)
    assert len(mine) == APP.TOKENS and np.array_equal(np.concatenate(mine), np.concatenate(host))


class Logged(pb.ResponseSender):
    """A sender that also notes, in one log shared by every stream, which stream sent each response."""

    def __init__(self, log: list[int], stream: int):
        super().__init__()
        self.log, self.stream = log, stream

    def send(self, response: Any = None, flags: int = 0) -> None:
        self.log.append(self.stream)
        super().send(response, flags)


def interleaved(log: list[int]) -> bool:
    """Whether some stream's responses are not one run: another stream's came between them (c=8 served at once)."""
    runs = [stream for i, stream in enumerate(log) if i == 0 or log[i - 1] != stream]
    return len(runs) > len(set(runs))


@pytest.mark.parametrize("name", ["GpuTokens", "GpuTokensNV", "GpuTokensBP"])
def test_on_an_emulated_gpu_eight_token_streams_are_served_at_once_each_with_its_own_tokens(
    built: Path, name: str
) -> None:
    """bench/gpu.py's c=8 and c=32 for the token streams: many streams in flight on one instance, interleaved token
    by token, each answered as if alone (the best-practice twin's page-locked buffers shared between them)."""
    rng = np.random.default_rng(3)
    prompts = [rng.standard_normal(APP.WIDTH, dtype=np.float32) for _ in range(8)]
    log: list[int] = []
    with emulated():
        model = generated_on(built, name, 0) if name == "GpuTokens" else twin("GpuTokens", name, "GPU", 0)
        requests = [pb.InferenceRequest([pb.Tensor("prompt", p)]) for p in prompts]
        for i, request in enumerate(requests):
            request.sender = Logged(log, i)
        if name == "GpuTokens":  # the 8 calls start together, as a server's 8 streams would find them
            gate = threading.Event()  # (else the loop may finish a stream before the next execute reaches it)
            model._concurrent._loop.call_soon_threadsafe(gate.wait, 30)
            assert all(model.execute([request]) is None for request in requests)
            gate.set()
        else:

            async def together() -> None:
                await asyncio.gather(*(model.execute([request]) for request in requests))

            asyncio.run(together())
        got = []
        for request in requests:
            sent = [request.sender.queue.get(timeout=30) for _ in range(APP.TOKENS + 1)]
            assert [flags for _, flags in sent] == [0] * APP.TOKENS + [pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL]
            got.append([answers(response)["token"] for response, _ in sent[:-1]])
    assert interleaved(log), f"{name} served its 8 streams one after another"
    for prompt, tokens in zip(prompts, got, strict=True):
        want = [one["token"] for one in LOCAL.stream("GpuTokens", {"prompt": prompt})]
        np.testing.assert_array_equal(np.concatenate(tokens), np.concatenate(want))
