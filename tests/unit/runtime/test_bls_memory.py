"""Where a BLS call asks Triton to put the called model's outputs: host memory for a numpy caller of a model that
may answer from a GPU, where made for a caller taking a framework's tensors, or what the handle asks."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.ir import lower
from repogen.runtime import bls

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]


def _clients() -> dict[str, tuple[str | None, str]]:
    repo = Repository()
    on_gpu = repo.bind("OnGpu", batch(lambda x: {"y": x}), inputs=X, outputs=Y,
                       config=ModelConfig(instance_groups=[InstanceGroup(kind="KIND_GPU")]))  # fmt: skip
    on_cpu = repo.bind("OnCpu", batch(lambda x: {"y": x}), inputs=X, outputs=Y)
    gpu_answers = on_cpu.preferred_memory("gpu")  # a handle asking for GPU memory: what the callable holds
    callers = {
        "NumpyCallsGpu": (lambda x: on_gpu(x=x), ModelConfig()),
        "NumpyCallsCpu": (lambda x: on_cpu(x=x), ModelConfig()),
        "TorchCallsGpu": (lambda x: on_gpu(x=x), ModelConfig(tensors="torch")),
        "AsksForGpu": (lambda x: gpu_answers(x=x), ModelConfig()),
    }
    for name, (call, config) in callers.items():
        repo.bind(name, batch(call), inputs=X, outputs=Y, config=config)
    spec = lower(repo)
    return {name: (c.memory, c.tensors) for name in callers for c in spec.model(name).versions[0].clients}


def test_each_caller_asks_for_the_memory_it_can_read():
    import torch_cpu  # noqa: F401  (torch, or a failure naming `make frameworks`)

    assert _clients() == {
        "NumpyCallsGpu": ("cpu", "numpy"),
        "NumpyCallsCpu": (None, "numpy"),
        "TorchCallsGpu": (None, "torch"),
        "AsksForGpu": ("gpu", "numpy"),
    }


def test_the_request_carries_pythons_backends_preferred_memory(monkeypatch):
    made = []

    class PreferredMemory:
        def __init__(self, kind: int, device: int):
            self.kind, self.device = kind, device

    class InferenceRequest:
        def __init__(self, **kwargs):
            made.append(kwargs)

    backend = SimpleNamespace(
        TRITONSERVER_MEMORY_GPU=0, TRITONSERVER_MEMORY_CPU=1, PreferredMemory=PreferredMemory,
        InferenceRequest=InferenceRequest, Tensor=lambda name, array: (name, array),
    )  # fmt: skip
    monkeypatch.setattr(bls, "_backend", lambda: backend)
    for memory in (None, "cpu", "gpu"):
        bls.ModelClient("M", {"x": "TYPE_FP32"}, ("y",), memory=memory)._request({"x": np.ones((1, 1), np.float32)})
    assert "preferred_memory" not in made[0]
    assert [(m["preferred_memory"].kind, m["preferred_memory"].device) for m in made[1:]] == [(1, 0), (0, 0)]
    assert bls.ModelClient("M", {}, ("y",)).preferred_memory("gpu").memory == "gpu"
