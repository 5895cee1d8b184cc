"""One model read at once by a GPU BLS caller and by network clients (issue 57, item 6), on the emulated GPU.

The build keeps the model's GPU outputs on the GPU (``output_memory="gpu"``: a torch caller on a GPU instance reads
it, docs/gpu.md), so every reader of a batch gets them there: the runtime hands each request's outputs as capsules
after the batch's one wait, the BLS caller's tensors go into the CUDA pool, and the server copies the network
clients' to host memory itself (one ``LoadGPUBuffers`` round trip for the batch, one blocking copy per output per
client). Here the dynamic batcher's merge is played by hand: the caller's BLS request and three network requests
served in one ``execute`` of the callee, then the caller's own batch answered through runtime/gpu_batch.py's lane.
Each reader's answer is checked value by value (a missing wait reads poison), and each copy and wait is counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.local import backend_shim as pb
from repogen.packages.options import PackageOptions
from repogen.runtime import bls

F32 = np.float32
AB = [Tensor(name="a", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))]
YZ = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))]
CONFIG = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch")
NETWORK = 3  # network clients in the callee's batch beside the BLS caller


def _repository() -> Repository:
    repo = Repository()

    @batch
    def callee_function(a, b):
        if a.device.type != "cuda" or b.device.type != "cuda":  # (no assert: pytest rewrites those)
            raise TypeError(f"inputs on the instance's GPU, found {a.device} and {b.device}")
        return {"y": a * 2, "z": a + b}

    callee = repo.bind("Callee", callee_function, inputs=AB, outputs=YZ, config=CONFIG)

    @batch
    def caller_function(a, b):
        made = callee(a=a, b=b)
        if any(value.device.type != "cuda" for value in made.values()):
            raise TypeError("the callee's outputs stay on the GPU")
        return {"y": made["y"] + 1, "z": made["z"] * 1}

    repo.bind("Caller", caller_function, inputs=AB, outputs=YZ, config=CONFIG)
    return repo


def _instance(built: Any, name: str, root) -> Any:
    """``name`` as the stub loads it from the build (its callable unpickled: a handle it calls is a BLS client)."""
    args = initialize_args(built.spec.model(name), name, root / name, "GPU")
    model = TritonPythonModel()
    model.initialize(args)
    return model


def _network(i: int) -> Any:
    """Network client ``i``: i + 1 rows, a of i, b of 10."""
    return _request(a=np.full((i + 1, 3), i, F32), b=np.full((i + 1, 3), 10, F32))


def _host(tensor: Any) -> list:
    value = tensor._array
    return (value if isinstance(value, np.ndarray) else pb.GPU_RUNTIME.to_host(value)).tolist()


class _MergedBatch:
    """python_backend's BLS for the caller, the dynamic batcher for the callee: the caller's request served in one
    ``execute`` with the network clients' (its first), each response then taken by the server as its reader takes it
    (the caller's into the CUDA pool, the clients' to host memory)."""

    def __init__(self, callee: Any, network: list[Any]):
        self.callee, self.network = callee, network
        self.network_responses: list[Any] = []
        self.Tensor = pb.Tensor

    def InferenceRequest(self, *, inputs: list[Any], requested_output_names: list[str], **_: Any) -> Any:  # noqa: N802
        merged = self

        class Request:
            def exec(self) -> Any:
                mine = pb.InferenceRequest(inputs, "", requested_output_names)
                responses = merged.callee.execute([mine, *merged.network])
                pb.deliver(responses, ["gpu"] + ["host"] * len(merged.network))
                merged.network_responses = responses[1:]
                return responses[0]

        return Request()


def test_a_model_read_by_a_gpu_bls_caller_and_network_clients_at_once(gpu, tmp_path, monkeypatch):
    built = build_repository(_repository(), tmp_path / "repo", packages=PackageOptions(mode="record"))
    assert built.spec.model("Callee").placement.output_memory == "gpu"  # the build's choice: a GPU reader takes them
    assert built.spec.model("Caller").placement.output_memory == "host"
    callee = _instance(built, "Callee", tmp_path / "repo")
    caller = _instance(built, "Caller", tmp_path / "repo")
    merged = _MergedBatch(callee, [_network(i) for i in range(NETWORK)])
    monkeypatch.setattr(bls, "_backend", lambda: merged)
    gpu.counts.clear()
    pb.COUNTS.clear()

    (answer,) = caller.execute([_request(a=np.full((2, 3), 5, F32), b=np.full((2, 3), 1, F32))])

    assert not answer.has_error(), answer.error().message()
    assert {t.name(): _host(t) for t in answer.output_tensors()} == {"y": [[11.0] * 3] * 2, "z": [[6.0] * 3] * 2}
    assert all(type(t._array) is np.ndarray for t in answer.output_tensors())  # the caller's clients: host memory
    for i, response in enumerate(merged.network_responses):
        assert not response.has_error(), response.error().message()
        assert all(type(t._array) is np.ndarray for t in response.output_tensors())  # copied by the server
        assert {t.name(): t._array.tolist() for t in response.output_tensors()} == {
            "y": [[2.0 * i] * 3] * (i + 1), "z": [[i + 10.0] * 3] * (i + 1)
        }  # fmt: skip
    c = gpu.counts
    # the caller's batch: one copy in, the BLS call's two GPU inputs after one wait, two copies out and one wait
    # (runtime/gpu_batch.py); the callee's: one copy in for the clients' host rows (the caller's are on the GPU),
    # each request's two outputs as capsules after one wait
    assert c["h2d async"] + c["h2d blocking"] == 2
    assert c["d2h async"] + c["d2h blocking"] == 2
    assert c["sync"] == 3
    assert c["capsules"] == 2 + 2 * (1 + NETWORK)
    assert c["d2d"] + c["d2d peer"] == 0
    # the server: one round trip for the callee's batch, the caller's two outputs into the pool, two blocking copies
    # for each network client; nothing for the caller's answer (host memory already)
    assert dict(pb.COUNTS) == {"LoadGPUBuffers": 1, "pool copies": 2, "blocking d2h copies": 2 * NETWORK}
