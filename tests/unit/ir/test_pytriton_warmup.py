"""PyTriton 0.7's ``ModelConfig(model_warmup=[ModelWarmup(...)])``: what the build refuses, each error naming the
model, the warm-up, the input and the fix; tests/integration/test_pytriton_warmup_served.py serves one."""

from __future__ import annotations

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, ModelWarmup, Repository, Tensor, Warmup, WarmupInput, batch
from repogen.ir.lower import lower

INPUTS = [Tensor(name="x", dtype=np.float32, shape=(-1,)), Tensor(name="text", dtype=bytes, shape=(1,))]
RANDOM_X = WarmupInput(dtype=np.float32, shape=(4,), random_data=True)
EMPTY_TEXT = WarmupInput(dtype=np.bytes_, shape=(1,), zero_data=True)


@batch
def _echo(x, text):
    return {"y": x}


def _lowered(*warmups: ModelWarmup, warmup: tuple[Warmup, ...] = (), max_batch_size: int = 8):
    models = Repository()
    models.bind(
        model_name="Warmed",
        infer_func=_echo,
        inputs=INPUTS,
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=max_batch_size, model_warmup=list(warmups), warmup=warmup),
    )
    return lower(models).models[0].warmup


def test_each_input_keeps_its_own_data_and_pytritons_come_first():
    zeros = Warmup(name="zeros", shapes={"x": (2,)})
    first, second = _lowered(ModelWarmup("mixed", 2, {"text": EMPTY_TEXT, "x": RANDOM_X}, 3), warmup=(zeros,))
    assert (first.name, first.batch_size, first.count) == ("mixed", 2, 3)
    assert first.inputs == (("text", "TYPE_STRING", (1,), "zero"), ("x", "TYPE_FP32", (4,), "random"))
    assert second.name == "zeros" and {data for *_, data in second.inputs} == {"zero"}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"x": RANDOM_X}, "its inputs must be the model's: missing ['text'] (declared: ['text', 'x'])"),
        ({"x": RANDOM_X, "text": EMPTY_TEXT, "y": RANDOM_X}, "unknown ['y']"),
        (
            {"x": WarmupInput(np.int32, (4,), zero_data=True), "text": EMPTY_TEXT},
            "input 'x': dtype TYPE_INT32 differs from the input's declared TYPE_FP32",
        ),
        (
            {"x": RANDOM_X, "text": WarmupInput(bytes, (2,), zero_data=True)},
            "input 'text': shape [2] must be positive and fit the declared [1] (no batch axis)",
        ),
        (
            {"x": WarmupInput(np.float32, (4,)), "text": EMPTY_TEXT},
            "input 'x': no data: set zero_data=True or random_data=True",
        ),
        (
            {"x": WarmupInput(np.float32, (4,), input_data_file="x.bin"), "text": EMPTY_TEXT},
            "input 'x': input_data_file='x.bin' is not supported: Triton reads it from the model's warmup/ directory",
        ),
    ],
    ids=["missing", "unknown", "dtype", "shape", "no data", "data file"],
)
def test_a_warmup_that_would_fail_the_load_fails_the_build_naming_the_input(inputs, message):
    with pytest.raises(BuildError) as failed:
        _lowered(ModelWarmup("bad", 1, inputs, 1))
    assert "model 'Warmed'" in str(failed.value) and "model_warmup 'bad'" in str(failed.value)
    assert message in str(failed.value)
    assert "test_pytriton_warmup.py:" in str(failed.value)  # the bind's line


def test_its_batch_size_fits_the_models():
    with pytest.raises(BuildError, match=r"model_warmup 'big': needs count >= 1 and 1 <= batch_size <= max_batch_si"):
        _lowered(ModelWarmup("big", 9, {"x": RANDOM_X, "text": EMPTY_TEXT}, 1))
