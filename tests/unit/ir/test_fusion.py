"""``fuse=True``: an ensemble compiled into one Python model; what cannot fuse is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import BuildError, InstanceGroup, ModelConfig, Repository, SequenceBatcher, Tensor, batch
from repogen.ir import lower

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]


def _pipeline(step_config: ModelConfig | None = None, streaming=False, fuse=True, ensemble_config=None):
    repo = Repository()
    config = step_config or ModelConfig(max_batch_size=8)

    @repo.model("Add", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=8))
    @batch
    def add(x):
        return {"y": x + 1}

    if streaming:

        @repo.model("Stream", inputs=X, outputs=Y, config=config)
        def mul(requests):
            yield [{"y": r["x"]} for r in requests]

    else:

        @repo.model("Mul", inputs=X, outputs=Y, config=config)
        @batch
        def mul(x):
            return {"y": x * 3}

    @repo.ensemble("Fused", inputs=X, outputs=Y, config=ensemble_config or ModelConfig(max_batch_size=8), fuse=fuse)
    def fused(x):
        return {"y": mul(x=add(x=x)["y"])["y"]}

    return repo


def _error(repo) -> str:
    with pytest.raises(BuildError) as info:
        lower(repo)
    return str(info.value)


def test_a_fused_ensemble_keeps_its_steps_and_schedules_like_a_model():
    spec = lower(_pipeline())
    (fused,) = spec.fused
    assert fused.name == "Fused" and [s.model for s in fused.steps] == ["Add", "Mul"]
    assert [m.name for m in fused.step_models] == ["Add", "Mul"]
    assert fused.model.max_batch_size == 8 and fused.model.scheduler is not None  # the ensemble config's batcher
    assert [g.kind for g in fused.model.instance_groups] == ["KIND_CPU"]
    assert {m.name for m in spec.models} == {"Add", "Mul"}  # the composing models stay
    assert spec.fused_spec("Fused") is fused and lower(_pipeline(fuse=False)).fused == ()


def test_a_fused_ensemble_config_is_lowered_as_a_models_is():
    """One lowering for both: a non-string parameter was refused for a model and written for a fused ensemble."""
    bad = ModelConfig(max_batch_size=8, parameters={"k": 1})
    assert "model 'Mul': parameters must map str to str" in _error(_pipeline(step_config=bad))
    assert "ensemble 'Fused': parameters must map str to str" in _error(_pipeline(ensemble_config=bad))
    good = lower(_pipeline(ensemble_config=ModelConfig(max_batch_size=8, parameters={"k": "1"})))
    assert good.fused[0].model.parameters == (("k", "1"),)


def test_a_decoupled_step_is_refused():
    message = _error(_pipeline(streaming=True))
    assert "ensemble 'Fused' (fuse=True): step 'Stream' is decoupled (it streams responses)" in message


def test_a_sequence_batched_step_is_refused():
    config = ModelConfig(max_batch_size=8, batcher=SequenceBatcher(strategy="oldest"))
    message = _error(_pipeline(step_config=config))
    assert "step 'Mul' uses sequence batching" in message and "drop fuse=True" in message


def test_steps_on_different_devices_are_refused():
    config = ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[0])])
    message = _error(_pipeline(step_config=config))
    assert "its steps run on different devices or instance kinds ('Add' on KIND_CPU; 'Mul' on KIND_GPU gpus [0])" in (
        message
    )


def test_an_ensemble_step_is_refused():
    repo = Repository()

    @repo.model("Add", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=8))
    @batch
    def add(x):
        return {"y": x + 1}

    @repo.ensemble("Inner", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=8))
    def inner(x):
        return {"y": add(x=x)["y"]}

    @repo.ensemble("Outer", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=8), fuse=True)
    def outer(x):
        return {"y": inner(x=x)["y"]}

    assert "ensemble 'Outer' (fuse=True): step 'Inner' is an ensemble; fusing composes Python models only" in (
        _error(repo)
    )


def test_a_reshaped_step_input_is_refused():
    repo = Repository()
    flat = [Tensor(name="x", dtype=np.float32, shape=(4,), reshape=(2, 2))]

    @repo.model(
        "Square",
        inputs=flat,
        outputs=[Tensor(name="y", dtype=np.float32, shape=(2, 2))],
        config=ModelConfig(max_batch_size=8),
    )
    @batch
    def square(x):
        return {"y": x * x}

    @repo.ensemble(
        "Fused",
        inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(2, 2))],
        config=ModelConfig(max_batch_size=8),
        fuse=True,
    )
    def fused(x):
        return {"y": square(x=x)["y"]}

    message = _error(repo)
    assert "ensemble 'Fused' (fuse=True): step 'Square' reshapes input(s) ['x']" in message
    assert "drop fuse=True" in message
