"""A framework's tensors in and out of the runtime, on the CPU: torch (the CPU build) and array_api_strict (any
array-API library, through DLPack and the standard's namespace), run through the general ``execute`` on the
backend shim. The same code serves GPU tensors; tests/gpu runs it on a real GPU and tritonserver."""

from __future__ import annotations

from typing import Any

import array_api_strict as xp  # the dev extra (make install)
import numpy as np
import pytest
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request
from torch_cpu import torch  # a failure naming `make frameworks` where it is missing

from repogen import (
    ConstantPadder,
    InstanceGroup,
    ModelConfig,
    Repository,
    Tensor,
    batch,
    fill_optionals,
    group_by_values,
    pad_batch,
)
from repogen.errors import BuildError
from repogen.ir import lower
from repogen.local import backend_shim as pb
from repogen.runtime.context import TritonContext
from repogen.runtime.contract import FORCE_CPU_ONLY_INPUT_TENSORS
from repogen.runtime.devices import use_device
from repogen.runtime.frameworks import framework_of

F32 = np.float32
X = [Tensor(name="x", dtype=F32, shape=(-1,))]
Y = [Tensor(name="y", dtype=F32, shape=(-1,))]


def _model(repo: Repository, name: str, tmp_path, kind: str = "CPU") -> Any:
    spec = lower(repo).model(name)
    args = initialize_args(spec, name, tmp_path, kind)
    model = TritonPythonModel()
    model.configure(args, list(spec.versions[-1].infer_funcs), spec.strict, spec.placement.tensors)
    return model


def _answers(model: Any, *requests: Any) -> list[Any]:
    """Each response's outputs as (numpy dtype or the framework's, values), or its error message."""
    found = []
    for response in model.execute(list(requests)):
        if response.has_error():
            found.append(response.error().message())
            continue
        outputs = {}
        for tensor in response.output_tensors():
            value = tensor._array
            outputs[tensor.name()] = (str(value.dtype), value.tolist())
        found.append(outputs)
    return found


def _returning(value_of, strict: bool = True, config: ModelConfig | None = None, outputs=Y) -> Repository:
    repo = Repository()

    @repo.model("M", inputs=X, outputs=outputs, config=config or ModelConfig(max_batch_size=8), strict=strict)
    @batch
    def m(x):
        return {"y": value_of(x)}

    return repo


# -- out -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda x: torch.from_numpy(x) * 2,
        lambda x: torch.from_numpy(x).requires_grad_() * 2,  # DLPack refuses a tensor keeping a graph: detached
        lambda x: torch.from_numpy(np.ascontiguousarray(np.stack([x, x], axis=2))).transpose(1, 2)[:, 0] * 2,
        lambda x: xp.asarray(x) * 2,
    ],
    ids=["torch", "torch with grad", "torch not contiguous", "array_api_strict"],
)
def test_a_framework_tensor_goes_out_as_declared(make, tmp_path):
    model = _model(_returning(make), "M", tmp_path)
    x = np.array([[1, 2], [3, 4]], dtype=F32)
    assert _answers(model, _request(x=x)) == [{"y": ("float32", [[2, 4], [6, 8]])}]


def test_two_requests_are_split_on_the_tensors_own_framework(tmp_path):
    model = _model(_returning(lambda x: torch.from_numpy(x) + 1), "M", tmp_path)
    one, two = np.array([[1.0]], dtype=F32), np.array([[2.0], [3.0]], dtype=F32)
    assert _answers(model, _request(x=one), _request(x=two)) == [
        {"y": ("float32", [[2.0]])},
        {"y": ("float32", [[3.0], [4.0]])},
    ]


def test_strict_names_the_frameworks_dtype(tmp_path):
    model = _model(_returning(lambda x: torch.from_numpy(x).double()), "M", tmp_path)
    (error,) = _answers(model, _request(x=np.ones((1, 2), F32)))
    assert error == "InferenceError: model 'M' output 'y': expected dtype float32, found torch.float64 (strict=True)"


def test_not_strict_casts_on_the_tensors_device(tmp_path):
    model = _model(_returning(lambda x: xp.asarray(x.astype(np.float64)), strict=False), "M", tmp_path)
    assert _answers(model, _request(x=np.ones((1, 2), F32))) == [{"y": ("float32", [[1.0, 1.0]])}]


def test_bf16_goes_out_through_dlpack_and_numpy_cannot_be_bf16(tmp_path):
    bf16 = [Tensor(name="y", dtype="bfloat16", shape=(-1,))]
    model = _model(_returning(lambda x: torch.from_numpy(x).to(torch.bfloat16), outputs=bf16), "M", tmp_path)
    ((value,),) = [[t._array for t in r.output_tensors()] for r in model.execute([_request(x=np.ones((1, 2), F32))])]
    assert value.dtype == torch.bfloat16 and value.tolist() == [[1.0, 1.0]]
    model = _model(_returning(lambda x: x, outputs=bf16), "M", tmp_path)
    (error,) = _answers(model, _request(x=np.ones((1, 2), F32)))
    assert error.startswith("InferenceError: model 'M' output 'y' is declared BF16, which numpy cannot hold, but the ")
    assert error.endswith("return a bfloat16 tensor of a framework (torch.bfloat16, through DLPack)")


# -- in --------------------------------------------------------------------------------------------


def test_a_framework_model_takes_its_tensors_merged_by_its_framework(tmp_path):
    seen = []
    repo = Repository()

    @repo.model("T", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=8, tensors="torch"))
    @batch
    def t(x):
        seen.append((type(x), str(x.device), tuple(x.shape)))
        return {"y": x * 10}

    model = _model(repo, "T", tmp_path)
    one, two = np.array([[1.0]], dtype=F32), np.array([[2.0], [3.0]], dtype=F32)
    assert _answers(model, _request(x=one), _request(x=two)) == [
        {"y": ("float32", [[10.0]])},
        {"y": ("float32", [[20.0], [30.0]])},
    ]
    assert seen == [(torch.Tensor, "cpu", (3, 1))]


def test_the_config_lets_inputs_stay_where_they_are_unless_the_user_said_otherwise():
    def config(**kwargs: Any) -> dict[str, str]:
        repo = Repository()
        repo.bind("M", lambda requests: requests, inputs=X, outputs=Y, config=ModelConfig(**kwargs))
        spec = lower(repo).model("M")
        return {"parameters": dict(spec.parameters), "placement": spec.placement}

    found = config(tensors="torch")  # alone: its inputs come over the network, in host memory either way
    assert found["parameters"] == {} and not found["placement"].inputs_anywhere
    found = config(tensors="torch", parameters={FORCE_CPU_ONLY_INPUT_TENSORS: "no"})  # CUDA shared-memory clients
    assert found["parameters"] == {FORCE_CPU_ONLY_INPUT_TENSORS: "no"} and found["placement"].inputs_anywhere
    found = config(tensors="torch", parameters={FORCE_CPU_ONLY_INPUT_TENSORS: "yes"})
    assert found["parameters"] == {FORCE_CPU_ONLY_INPUT_TENSORS: "yes"} and not found["placement"].inputs_anywhere
    found = config()
    assert found["parameters"] == {} and found["placement"].numpy_on_cpu


def test_bytes_stay_numpy_and_bf16_arrives_as_the_frameworks(tmp_path):
    repo = Repository()
    inputs = [Tensor(name="s", dtype=bytes, shape=(1,)), Tensor(name="h", dtype="BF16", shape=(2,))]
    outputs = [Tensor(name="n", dtype=np.int64, shape=(1,)), Tensor(name="y", dtype=F32, shape=(2,))]

    @repo.model("T", inputs=inputs, outputs=outputs, config=ModelConfig(max_batch_size=8, tensors="torch"))
    @batch
    def t(s, h):
        assert s.dtype == object and h.dtype == torch.bfloat16
        return {"n": np.array([[len(v)] for v in s[:, 0]], dtype=np.int64), "y": h.float() * 2}

    model = _model(repo, "T", tmp_path)
    request = pb.InferenceRequest(
        [pb.Tensor("s", np.array([[b"abc"]], dtype=object)), pb.Tensor("h", torch.ones((1, 2), dtype=torch.bfloat16))]
    )
    assert _answers(model, request) == [{"n": ("int64", [[3]]), "y": ("float32", [[2.0, 2.0]])}]


def test_batch_decorators_work_on_the_frameworks_tensors(tmp_path):
    repo = Repository()
    inputs = [Tensor(name="x", dtype=F32, shape=(-1,)), Tensor(name="k", dtype=np.int32, shape=(1,), optional=True)]
    config = ModelConfig(max_batch_size=4, tensors="array_api_strict")

    @repo.model("G", inputs=inputs, outputs=Y, config=config)
    @fill_optionals(k=np.array([7], dtype=np.int32))
    @batch
    @group_by_values("k", pad_fn=ConstantPadder(0))
    @pad_batch
    def g(x, k):
        assert framework_of(x).name == "array API" and framework_of(k).name == "array API"
        assert x.shape[0] == 4  # padded to max_batch_size
        width = int(xp.max(k)) % 4  # groups answer with different widths: padded to one again
        return {"y": xp.concat([x[:, :1] + xp.astype(k, xp.float32)] * width, axis=1)}

    model = _model(repo, "G", tmp_path)
    requests = [
        _request(x=np.array([[1.0]], dtype=F32), k=np.array([[1]], dtype=np.int32)),
        _request(x=np.array([[2.0], [3.0]], dtype=F32)),  # k filled in: 7
    ]
    assert _answers(model, *requests) == [
        {"y": ("float32", [[2.0, 0.0, 0.0]])},
        {"y": ("float32", [[9.0, 9.0, 9.0], [10.0, 10.0, 10.0]])},
    ]


# -- building --------------------------------------------------------------------------------------


def _lowered(config: ModelConfig, inputs=X) -> None:
    repo = Repository()
    repo.bind("M", lambda requests: requests, inputs=inputs, outputs=Y, config=config)
    lower(repo)


def test_what_a_placement_cannot_be_fails_the_build():
    with pytest.raises(BuildError, match=r"input\(s\) \['h'\] are BF16, which numpy cannot hold; declare Mod"):
        _lowered(ModelConfig(), [Tensor(name="h", dtype="bfloat16", shape=(2,))])
    with pytest.raises(
        BuildError, match=r"tensors='cupy' holds tensors on a GPU only, but instance group\(s\) \['M_0'"
    ):
        _lowered(ModelConfig(tensors="cupy"))
    with pytest.raises(BuildError, match=r"tensors='no_such_framework', but no module 'no_such_framework' can be "):
        _lowered(ModelConfig(tensors="no_such_framework"))
    with pytest.raises(BuildError, match=r"tensors must be \"numpy\", \"torch\", \"cupy\" or the name of an array-API"):
        _lowered(ModelConfig(tensors=3))  # type: ignore[arg-type]
    _lowered(ModelConfig(tensors=torch, instance_groups=[InstanceGroup(kind="KIND_GPU")]))  # a module object will do


def test_the_framework_ships_with_the_model():
    repo = Repository()
    repo.bind("M", lambda requests: requests, inputs=X, outputs=Y, config=ModelConfig(tensors="array_api_strict"))
    assert lower(repo).model("M").versions[0].imports == ("array_api_strict",)


# -- the instance's device -------------------------------------------------------------------------


def test_the_context_names_the_instances_device():
    args = {"model_config": "{}", "model_instance_kind": "GPU", "model_instance_device_id": "1"}
    assert TritonContext.from_args(args, "torch").device == "cuda:1"
    assert TritonContext.from_args({**args, "model_instance_kind": "CPU"}).device == "cpu"


def test_cuda_means_the_instances_gpu_in_the_frameworks_the_model_loaded(monkeypatch):
    chosen = []

    class Cuda:
        @staticmethod
        def set_device(index: int) -> None:
            chosen.append(index)

    class FakeTorch:
        cuda = Cuda

    monkeypatch.setitem(__import__("sys").modules, "torch", FakeTorch)
    use_device("cpu")
    use_device("cuda:2")
    assert chosen == [2]
