"""A numpy model whose user let Triton leave its inputs where they were made (FORCE_CPU_ONLY_INPUT_TENSORS "no"),
on the emulated GPU: python_backend then hands it GPU tensors from a GPU producer and host tensors from network
clients in the same batch, and numpy reads neither of the first (``as_numpy`` refuses them). runtime/devices.py's
``host_input`` copies each to the host through the framework the process loaded; with none loaded, the request is
answered with what to declare instead."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from general_path import TritonPythonModel, initialize_args
from torch_cpu import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.local import backend_shim as pb
from repogen.packages.options import PackageOptions
from repogen.runtime.contract import FORCE_CPU_ONLY_INPUT_TENSORS

F32 = np.float32


def _repository(kind: str) -> Repository:
    repo = Repository()

    @batch
    def plus_one(a):
        if type(a) is not np.ndarray:  # (no assert: pytest rewrites those)
            raise TypeError(f"a numpy model takes numpy arrays, found {type(a)}")
        return {"y": a + 1}

    repo.bind("Numpy", plus_one, inputs=[Tensor(name="a", dtype=F32, shape=(3,))],
              outputs=[Tensor(name="y", dtype=F32, shape=(3,))],
              config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind=kind)],
                                 parameters={FORCE_CPU_ONLY_INPUT_TENSORS: "no"}))  # fmt: skip
    return repo


@pytest.fixture(params=["KIND_GPU", "KIND_CPU"])  # python_backend hands a CPU instance GPU inputs under it too
def built(request: Any, tmp_path: Path) -> Any:
    repo = _repository(request.param)
    return build_repository(repo, tmp_path / "repo", packages=PackageOptions(mode="record")), tmp_path, request.param


def _instance(built: Any) -> Any:
    result, root, kind = built
    args = initialize_args(result.spec.model("Numpy"), "Numpy", root / "repo" / "Numpy", kind.removeprefix("KIND_"))
    model = TritonPythonModel()
    model.initialize(args)
    return model


def _on_gpu(value: float, rows: int, device: str = "cuda:0") -> Any:
    """An input as python_backend hands it from a GPU producer: the producer's tensor, taken by ``from_dlpack``."""
    return pb.Tensor.from_dlpack("a", torch.full((rows, 3), value, dtype=torch.float32, device=device))


def _answers(responses: list[Any]) -> list[Any]:
    return [r.error().message() if r.has_error() else {t.name(): t.as_numpy().tolist() for t in r.output_tensors()}
            for r in pb.deliver(responses)]  # fmt: skip


def test_the_build_carries_the_copy_for_a_numpy_model_taking_inputs_anywhere(built):
    version = built[1] / "repo" / "Numpy" / "1" / "repogen" / "runtime"
    assert (version / "devices.py").is_file() and (version / "frameworks.py").is_file()


def test_gpu_inputs_are_copied_to_the_host_beside_a_network_clients(built, gpu):
    model = _instance(built)
    requests = [
        pb.InferenceRequest([_on_gpu(2.0, 2)]),  # from a GPU step of an ensemble
        pb.InferenceRequest([pb.Tensor("a", np.full((1, 3), 5.0, F32))]),  # from a network client
        pb.InferenceRequest([_on_gpu(7.0, 1, "cuda:1")]),  # from a step on the other GPU
    ]
    assert not requests[0].inputs()[0].is_cpu() and not requests[2].inputs()[0].is_cpu()
    gpu.counts.clear()
    assert _answers(model.execute(requests)) == [{"y": [[3.0] * 3] * 2}, {"y": [[6.0] * 3]}, {"y": [[8.0] * 3]}]
    assert (gpu.counts["d2h blocking"], gpu.counts["d2h async"]) == (2, 0)  # a copy each GPU input, none for the host


def test_with_no_framework_loaded_the_request_is_told_what_to_declare(built, gpu, monkeypatch):
    model = _instance(built)
    request = pb.InferenceRequest([_on_gpu(2.0, 1)])
    with monkeypatch.context() as unloaded:  # a process that never imported one (the stub's, with numpy alone)
        unloaded.delitem(sys.modules, "torch")
        responses = model.execute([request])
    (answer,) = _answers(responses)
    assert answer == (
        "InferenceError: model 'Numpy' input 'a' arrived in GPU memory (FORCE_CPU_ONLY_INPUT_TENSORS is \"no\"), "
        "but the tensor lives in GPU memory and numpy cannot read it; no framework that can copy it to the host "
        '(torch, cupy) is loaded in this model; declare ModelConfig(tensors="torch") (or "cupy") to take it on the '
        "GPU, or drop that parameter so that Triton hands this model CPU tensors"
    )
