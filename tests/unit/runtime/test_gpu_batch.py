"""runtime/gpu_batch.py's lane on the emulated GPU: a torch model's batch under a plain ``@batch`` with the same few
tensor-API calls whatever the number of requests, and every case it does not take answered exactly as the general
path answers it (the same values, the same error message), with its copies and waits still right."""

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
from repogen.runtime.contract import FORCE_CPU_ONLY_INPUT_TENSORS

F32 = np.float32
GPU = [InstanceGroup(kind="KIND_GPU")]
A = [Tensor(name="a", dtype=F32, shape=(3,))]
Y = [Tensor(name="y", dtype=F32, shape=(3,))]
YZ = [*Y, Tensor(name="z", dtype=F32, shape=(1,))]


def _model(repo: Repository, name: str, tmp_path: Any, lane: bool = True) -> Any:
    spec = lower(repo).model(name)
    args = initialize_args(spec, name, tmp_path, "GPU")
    model = TritonPythonModel()
    output_memory = spec.placement.output_memory or "host"
    model.configure(args, list(spec.versions[-1].infer_funcs), spec.strict, spec.placement.tensors, None, output_memory)
    if not lane:
        model._lane = None
    return model


def _bind(fn: Any, outputs: list[Tensor] = Y, strict: bool = True, inputs: list[Tensor] = A, **config: Any) -> Any:
    repo = Repository()
    repo.bind("M", fn, inputs=inputs, outputs=outputs, strict=strict,
              config=ModelConfig(max_batch_size=64, instance_groups=GPU, tensors="torch", **config))  # fmt: skip
    return repo


def _requests(sizes: list[int]) -> list[Any]:
    return [_request(a=np.full((rows, 3), i + 1, F32)) for i, rows in enumerate(sizes)]


def _answers(responses: list[Any]) -> list[Any]:
    """Each response as a client reads it: the error's message, or each output's values."""
    found = []
    for response in pb.deliver(responses):
        if response.has_error():
            found.append(response.error().message())
        else:
            found.append({t.name(): np.array(t.as_numpy()).tolist() for t in response.output_tensors()})
    return found


def _both(repo: Repository, sizes: list[int], tmp_path: Any) -> list[Any]:
    """The answers of the lane and of the general path to the same batch, asserted equal."""
    lane, general = (_model(repo, "M", tmp_path, lane=taken) for taken in (True, False))
    assert lane._lane is not None
    mine = _answers(lane.execute(_requests(sizes)))
    assert mine == _answers(general.execute(_requests(sizes)))
    return mine


@pytest.mark.parametrize("count", [1, 4, 16])
def test_a_batch_costs_the_same_tensor_api_calls_whatever_its_requests(count, gpu, tmp_path):
    model = _model(_bind(batch(lambda a: {"y": a * 2})), "M", tmp_path)
    sizes = [1 + i % 3 for i in range(count)]
    model.execute(_requests(sizes))  # its page-locked memory made, and its views of a batch of these rows
    gpu.counts.clear()
    answers = _answers(model.execute(_requests(sizes)))
    assert answers == [{"y": [[2.0 * (i + 1)] * 3] * rows} for i, rows in enumerate(sizes)]
    # the input's copy, the callable's multiply, the output's dtype, shape and device, its copy, the wait
    assert gpu.counts["tensor API"] == 7
    assert (gpu.counts["h2d async"], gpu.counts["d2h async"], gpu.counts["sync"]) == (1, 1, 1)


def test_batches_of_changing_sizes_reuse_the_memory_and_answer_right(gpu, tmp_path):
    model = _model(_bind(batch(lambda a: {"y": a + 1})), "M", tmp_path)
    for sizes in ([1], [3, 2], [1], [64], [3, 2], [2, 1]):
        assert _answers(model.execute(_requests(sizes))) == [{"y": [[i + 2.0] * 3] * n} for i, n in enumerate(sizes)]
    assert gpu.counts["pinned allocations"] == 2  # the inputs' memory and the outputs', each made once


def _float64(a: Any) -> dict[str, Any]:
    return {"y": (a * 2).to(torch.float64)}


def _on_cpu(a: Any) -> dict[str, Any]:
    return {"y": (a * 2).cpu()}


def _on_gpu_1(a: Any) -> dict[str, Any]:
    return {"y": (a * 2).to("cuda:1")}


def _as_tuple(a: Any) -> tuple[Any]:
    return (a * 2,)


def _one_row_short(a: Any) -> dict[str, Any]:
    return {"y": (a * 2)[1:]}


def _wrong_width(a: Any) -> dict[str, Any]:
    return {"y": torch.cat([a, a], dim=1)}


def _extra(a: Any) -> dict[str, Any]:
    return {"y": a * 2, "w": a}


def _missing(a: Any) -> dict[str, Any]:
    return {"w": a}


def _numpy(a: Any) -> dict[str, Any]:
    return {"y": np.full(tuple(a.shape), 7.0, F32)}


def _transposed(a: Any) -> dict[str, Any]:
    return {"y": (a * 2).t().contiguous().t()}  # not contiguous: its copy still gives the rows in order


def _raises(a: Any) -> dict[str, Any]:
    raise ValueError("no such luck")


ODD = [_float64, _on_cpu, _on_gpu_1, _as_tuple, _one_row_short, _wrong_width, _extra, _missing, _numpy, _transposed,
       _raises]  # fmt: skip


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize("fn", ODD, ids=[f.__name__.lstrip("_") for f in ODD])
def test_what_the_lane_does_not_send_is_answered_as_the_general_path_answers_it(fn, strict, gpu, tmp_path):
    answers = _both(_bind(batch(fn), strict=strict), [2, 1, 3], tmp_path)
    assert len(answers) == 3


def test_outputs_that_keep_a_graph_leave_without_it(gpu, tmp_path):
    weight = torch.ones(3, device="cuda:0", requires_grad=True)
    model = _model(_bind(batch(lambda a: {"y": a * weight})), "M", tmp_path)
    for _ in range(3):
        assert _answers(model.execute(_requests([2, 1]))) == [{"y": [[1.0] * 3] * 2}, {"y": [[2.0] * 3]}]
    staged = model._lane.out.tensor
    assert staged.grad_fn is None and not staged.requires_grad  # nothing recorded on the memory it keeps


def test_two_outputs_and_two_inputs_cross_in_one_copy_each_way(gpu, tmp_path):
    inputs = [*A, Tensor(name="b", dtype=np.int32, shape=(1,))]
    repo = _bind(batch(lambda a, b: {"y": a * b, "z": a.sum(dim=1, keepdim=True)}), outputs=YZ, inputs=inputs)
    model = _model(repo, "M", tmp_path)
    requests = [_request(a=np.full((n, 3), 2.0, F32), b=np.full((n, 1), n, np.int32)) for n in (1, 2)]
    gpu.counts.clear()
    assert _answers(model.execute(requests)) == [
        {"y": [[2.0] * 3], "z": [[6.0]]}, {"y": [[4.0] * 3] * 2, "z": [[6.0]] * 2},
    ]  # fmt: skip
    assert (gpu.counts["h2d async"], gpu.counts["d2h async"], gpu.counts["sync"]) == (1, 2, 1)


def test_a_request_without_an_optional_input_takes_the_general_path(gpu, tmp_path):
    inputs = [*A, Tensor(name="b", dtype=F32, shape=(3,), optional=True)]
    repo = _bind(batch(lambda a, b=None: {"y": a * 2 if b is None else a + b}), inputs=inputs)
    lane, general = (_model(repo, "M", tmp_path, lane=taken) for taken in (True, False))
    requests = [_request(a=np.ones((1, 3), F32)), _request(a=np.ones((1, 3), F32), b=np.ones((1, 3), F32))]
    mine = _answers(lane.execute(requests))
    assert mine == _answers(general.execute(requests)) and "@batch cannot merge requests" in mine[0]
    assert _answers(lane.execute(requests[:1])) == [{"y": [[2.0] * 3]}]


def test_inputs_of_different_widths_take_the_general_path(gpu, tmp_path):
    inputs = [Tensor(name="a", dtype=F32, shape=(-1,))]
    repo = _bind(batch(lambda a: {"y": a * 2}), inputs=inputs, outputs=[Tensor(name="y", dtype=F32, shape=(-1,))])
    lane, general = (_model(repo, "M", tmp_path, lane=taken) for taken in (True, False))
    requests = [_request(a=np.ones((1, 3), F32)), _request(a=np.ones((1, 4), F32))]
    mine = _answers(lane.execute(requests))
    assert mine == _answers(general.execute(requests)) and "Sizes of tensors must match" in mine[0]


@pytest.mark.parametrize(
    "make",
    [
        lambda: _bind(batch(lambda a: {"y": a}), output_memory="gpu"),  # its readers are on the GPU: capsules
        lambda: _bind(batch(lambda a: {"y": a}), parameters={FORCE_CPU_ONLY_INPUT_TENSORS: "no"}),  # inputs anywhere
        lambda: _bind(lambda requests: [{"y": r["a"]} for r in requests]),  # no @batch
        lambda: _bind(batch(lambda a: {"y": a}), inputs=[Tensor(name="a", dtype=bytes, shape=(1,))]),  # BYTES in
        lambda: _bind(batch(lambda a: {"y": a}), outputs=[Tensor(name="y", dtype=bytes, shape=(3,))]),  # BYTES out
    ],
    ids=["gpu-readers", "gpu-inputs", "no-batch", "bytes-in", "bytes-out"],
)
def test_models_the_lane_does_not_take(make, gpu, tmp_path):
    assert _model(make(), "M", tmp_path)._lane is None


def test_a_cpu_instance_takes_no_lane(tmp_path):
    spec = lower(_bind(batch(lambda a: {"y": a}))).model("M")
    model = TritonPythonModel()
    model.configure(initialize_args(spec, "M", tmp_path), list(spec.versions[-1].infer_funcs), True, "torch")
    assert model._lane is None


def test_a_client_asking_for_some_outputs_gets_only_those(gpu, tmp_path):
    """runtime/requested.py on a GPU instance: the lane sends every output, so a batch with a request that asked for
    fewer goes the general way, which sends each client what it asked for."""
    repo = _bind(batch(lambda a: {"y": a * 2, "z": a.sum(dim=1, keepdim=True)}), outputs=YZ)
    model = _model(repo, "M", tmp_path)
    requests = [pb.InferenceRequest([pb.Tensor("a", np.full((1, 3), i + 1, F32))], requested=names)
                for i, names in enumerate([["y", "z"], ["z"]])]  # fmt: skip
    assert _answers(model.execute(requests)) == [{"y": [[2.0] * 3], "z": [[3.0]]}, {"z": [[6.0]]}]


def test_a_failed_batch_answers_each_request_with_a_response_of_its_own(gpu, tmp_path):
    """One response object answering two requests kills tritonserver 2.51 (TritonPythonModel.failures)."""

    def fails(a):
        raise RuntimeError("broken")

    model = _model(_bind(batch(fails)), "M", tmp_path)
    responses = model.execute(_requests([1, 2, 1]))
    assert len({id(response) for response in responses}) == 3
    assert all("broken" in message for message in _answers(responses))
