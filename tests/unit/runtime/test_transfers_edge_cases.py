"""The cases tests/mutation/survivors.md left open, on the emulated GPU: a batch whose outputs lie on two GPUs (a wait
on each, in device order, whatever order a set of their names iterates in), the instance's staged input memory over
three batches with a failed one first (the marker a failure leaves is waited on once, then forgotten), and
per-request outputs that lie back to back in device memory without one tensor holding them (a copy each: no view
spans them). Each test kills a mutant of runtime/transfers.py that the others let live (named in each)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request
from torch_cpu import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.ir import lower
from repogen.local import backend_shim as pb
from repogen.runtime import frameworks

F32 = np.float32
AB = [Tensor(name="a", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))]
YZ = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="z", dtype=F32, shape=(-1,))]
BATCHES = [1, 4, 16]


def _model(repo: Repository, name: str, tmp_path) -> Any:
    spec = lower(repo).model(name)
    args = initialize_args(spec, name, tmp_path, "GPU")
    model = TritonPythonModel()
    model.configure(args, list(spec.versions[-1].infer_funcs), spec.strict, spec.placement.tensors, None,
                    spec.placement.output_memory or "host")  # fmt: skip
    return model


def _requests(count: int) -> list[Any]:
    """``count`` requests of 1, 2, 3, ... rows: a of 1.0 per row, b of the request's number."""
    return [_request(a=np.ones((i + 1, 3), F32), b=np.full((i + 1, 3), i, F32)) for i in range(count)]


def _expected(count: int) -> list[dict[str, Any]]:
    return [{"y": np.full((i + 1, 3), 2.0).tolist(), "z": np.full((i + 1, 3), 1.0 + i).tolist()} for i in range(count)]


def _answers(responses: list[Any], output_memory: str = "host") -> list[dict[str, Any]]:
    """Each answer as its reader takes it, once the server fetched what is on a GPU."""
    found = []
    for response in pb.deliver(responses, output_memory):
        assert not response.has_error(), response.error().message()
        found.append({t.name(): (t._array if isinstance(t._array, np.ndarray) else pb.GPU_RUNTIME.to_host(t._array))
                      .tolist() for t in response.output_tensors()})  # fmt: skip
    return found


class _Device(str):
    """A device's name whose hash puts cuda:1 before cuda:0 in a set of the two (str's hash is seeded per process:
    the order a set iterates in is chance; here it is the wrong one, always)."""

    def __hash__(self) -> int:
        return 1 if self == "cuda:0" else 0


@pytest.mark.parametrize("count", BATCHES)
@pytest.mark.parametrize("memory", ["host", "gpu"])
def test_outputs_on_two_gpus_wait_on_each_in_device_order(count, memory, gpu, tmp_path, monkeypatch):
    """Kills `Departure._wait`'s mutants 5, 6, 7 (the devices waited on in a set's order) and 8 (`sorted(None)`)."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch",
                         output_memory=memory)  # fmt: skip
    repo.bind("Spread", batch(lambda a, b: {"y": a * 2, "z": (a + b).to("cuda:1")}), inputs=AB, outputs=YZ,
              config=config)  # fmt: skip
    model = _model(repo, "Spread", tmp_path)
    address = frameworks.Torch.address
    monkeypatch.setattr(frameworks.Torch, "address", lambda self, value: (_Device(address(self, value)[0]),
                                                                          *address(self, value)[1:]))  # fmt: skip
    assert list({_Device("cuda:0"), _Device("cuda:1")}) == ["cuda:1", "cuda:0"]  # a set's order is not the devices'
    waited = []
    synchronize = frameworks.Torch.synchronize
    monkeypatch.setattr(frameworks.Torch, "synchronize",
                        lambda self, device: waited.append(str(device)) or synchronize(self, device))  # fmt: skip
    gpu.counts.clear()
    assert _answers(model.execute(_requests(count)), output_memory=memory) == _expected(count)
    assert waited == ["cuda:0", "cuda:1"]  # one wait a device, in their order
    assert gpu.counts["sync"] == 2


def _failing_once(tmp_path) -> Any:
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch")
    calls = []

    @repo.model("Once", inputs=AB, outputs=YZ, config=config)
    @batch
    def once(a, b):
        calls.append(len(a))
        if len(calls) == 1:
            raise RuntimeError("the first batch fails")
        return {"y": a * 2, "z": a + b}

    return _model(repo, "Once", tmp_path)


@pytest.mark.parametrize("count", BATCHES)
def test_staged_inputs_serve_every_batch_after_a_failed_one(count, gpu, tmp_path):
    """Kills `Staging.take`'s mutant 2 (the marker left as "" once waited on, not None: the third batch's inputs
    would be staged by calling ``"".synchronize()``)."""
    model = _failing_once(tmp_path)
    assert model._lane is not None  # runtime/gpu_batch.py's lane: the failure leaves its staged memory marked
    failed = model.execute(_requests(count))
    assert all(r.has_error() and "the first batch fails" in r.error().message() for r in failed)
    for waits in (2, 1, 1):  # the marker waited on by the next batch (and its own wait), none left after it
        gpu.counts.clear()
        assert _answers(model.execute(_requests(count))) == _expected(count)
        assert gpu.counts["h2d async"] == 1 and gpu.counts["sync"] == waits


@pytest.mark.parametrize("count", [2, 4, 16])
def test_outputs_back_to_back_in_one_storage_but_no_view_of_one_tensor_copy_one_by_one(count, gpu, tmp_path):
    """Kills `_runs`' mutant 19 (the span checked `start - nbytes` long: outputs that lie back to back without one
    tensor holding them would be joined into a run that no view spans, and the batch would fail). A detached slice
    shares its tensor's memory but has no ``_base``: each request's output is its own tensor."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch")

    def apart(requests):
        rows = [len(r["a"]) for r in requests]
        y = torch.cat([r["a"] for r in requests]) * 2  # one allocation: each request's rows after the last's
        z = torch.cat([r["a"] + r["b"] for r in requests])
        answers, start = [], 0
        for n in rows:
            answers.append({"y": y[start : start + n].detach(), "z": z[start : start + n].detach()})
            start += n
        return answers

    repo.bind("Apart", apart, inputs=AB, outputs=YZ, config=config)
    model = _model(repo, "Apart", tmp_path)
    gpu.counts.clear()
    responses = model.execute(_requests(count))
    assert _answers(responses) == _expected(count)
    assert gpu.counts["d2h async"] + gpu.counts["d2h blocking"] == 2 * count  # no view spans two: a copy each
    assert gpu.counts["sync"] == 1


def test_the_general_path_keeps_its_page_locked_memory_between_batches(gpu, tmp_path):
    """Kills `Departure._staging`'s mutant 3 (`is not framework` → `is framework`: new page-locked memory at every
    batch). An undecorated callable's outputs leave by the general path (runtime/transfers.py's Departure)."""
    repo = Repository()
    config = ModelConfig(max_batch_size=64, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch")
    repo.bind("U", lambda requests: [{"y": r["a"] * 2, "z": r["a"] + r["b"]} for r in requests], inputs=AB,
              outputs=YZ, config=config)  # fmt: skip
    model = _model(repo, "U", tmp_path)
    assert _answers(model.execute(_requests(4))) == _expected(4)
    gpu.counts.clear()
    assert _answers(model.execute(_requests(4))) == _expected(4)
    assert gpu.counts["pinned allocations"] == 0  # the first batch's memory serves the next
