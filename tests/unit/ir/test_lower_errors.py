"""Mistakes in declarations are caught at build time with a message naming model, tensor and fix."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import BuildError, DynamicBatcher, ModelConfig, Repository, Tensor
from repogen.ir import lower


def f(requests):
    return requests


X = Tensor((-1,), np.float32, "x")
Y = Tensor((-1,), np.float32, "y")


def _bind(**overrides):
    repo = Repository()
    kwargs = {"model_name": "M", "infer_func": f, "inputs": [X], "outputs": [Y]} | overrides
    repo.bind(**kwargs)
    return repo


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"model_name": "bad/name"}, "model name 'bad/name' is not a valid Triton model name"),
        ({"model_name": ".hidden"}, "is not a valid Triton model name"),
        ({"inputs": [X, Tensor((2,), np.float32, "x")]}, "model 'M': input 'x' is declared twice"),
        ({"outputs": []}, "model 'M': declares no outputs"),
        (
            {"inputs": [Tensor((-1,), np.complex64, "c")]},
            "model 'M', input 'c': dtype <class 'numpy.complex64'>",
        ),
        ({"inputs": [Tensor((), np.float32, "s")]}, "model 'M', input 's': shape must be a non-empty tuple"),
        ({"inputs": [Tensor((0,), np.float32, "z")]}, "use (1,) for a scalar per sample"),
        (
            {"inputs": [Tensor((-2,), np.float32, "z")]},
            "shape must be a non-empty tuple of positive ints or -1",
        ),
        ({"inputs": [Tensor((1.5,), np.float32, "z")]}, "found (1.5,)"),
        ({"outputs": [Tensor((1,), np.float32, "o", optional=True)]}, "outputs cannot be optional"),
        ({"inputs": [Tensor((1,), np.float32, "has space")]}, "input name 'has space' is invalid"),
        ({"infer_func": []}, "infer_func is an empty list"),
        ({"infer_func": [f, 3]}, "infer_func[1] is a int, not a callable"),
        ({"model_version": 0}, "model_version must be an integer >= 1, found 0"),
        ({"config": ModelConfig(max_batch_size=-1)}, "max_batch_size must be an integer >= 0, found -1"),
        (
            {"config": ModelConfig(max_batch_size=4, batcher=DynamicBatcher(preferred_batch_size=[2, 8]))},
            "preferred_batch_size [2, 8] has [8]; each must be between 1 and max_batch_size=4",
        ),
        (
            {"config": ModelConfig(batcher=DynamicBatcher(priority_levels=2, default_priority_level=3))},
            "default_priority_level=3 must be between 1 and priority_levels=2",
        ),
        ({"config": ModelConfig(parameters={"k": 1})}, "parameters must map str to str"),
        ({"config": {"max_batch_size": 4}}, "config must be a repogen.ModelConfig, found dict"),
    ],
)
def test_declaration_errors(overrides, message):
    with pytest.raises(BuildError) as info:
        lower(_bind(**overrides))
    assert message in str(info.value)


def test_duplicate_model_and_version():
    repo = _bind()
    repo.bind("M", f, [X], [Y])
    with pytest.raises(BuildError, match="model 'M' is bound twice with model_version=1"):
        lower(repo)


def test_versions_must_share_config():
    repo = _bind()
    repo.bind("M", f, [X], [Y], model_version=2, config=ModelConfig(max_batch_size=8))
    with pytest.raises(BuildError, match="versions of one model share one config.pbtxt"):
        lower(repo)


def test_two_versions_lower_into_one_model():
    repo = _bind()
    repo.bind("M", f, [X], [Y], model_version=2)
    (model,) = lower(repo).models
    assert [v.version for v in model.versions] == [1, 2]


def test_empty_repository_and_wrong_object():
    with pytest.raises(BuildError, match="declares no model"):
        lower(Repository())
    with pytest.raises(BuildError, match="expected a repogen.Repository, found dict"):
        lower({})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float32, "TYPE_FP32"),
        ("float32", "TYPE_FP32"),
        ("FP16", "TYPE_FP16"),
        (np.dtype("int64"), "TYPE_INT64"),
        (bool, "TYPE_BOOL"),
        (np.bool_, "TYPE_BOOL"),
        (bytes, "TYPE_STRING"),
        (np.bytes_, "TYPE_STRING"),
        (object, "TYPE_STRING"),
        ("BYTES", "TYPE_STRING"),
        (np.uint8, "TYPE_UINT8"),
    ],
)
def test_dtype_mapping(dtype, expected):
    (model,) = lower(_bind(inputs=[Tensor((1,), dtype, "t")])).models
    assert model.inputs[0].data_type == expected


def test_direct_sequence_batching_needs_ready_when_batching():
    from repogen import SequenceBatcher

    with pytest.raises(BuildError, match="without a READY control the callable cannot tell them from real ones"):
        lower(_bind(config=ModelConfig(max_batch_size=2, batcher=SequenceBatcher(ready=None))))
    lower(_bind(config=ModelConfig(max_batch_size=2, batcher=SequenceBatcher(ready=None, strategy="oldest"))))
    lower(_bind(config=ModelConfig(batching=False, batcher=SequenceBatcher(ready=None))))
