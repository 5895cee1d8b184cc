"""One model per PyTriton decorator, written as a PyTriton user would (only the import differs)."""

import numpy as np

from repogen import (
    ConstantPadder,
    DynamicBatcher,
    ModelConfig,
    Repository,
    Tensor,
    batch,
    fill_optionals,
    first_value,
    group_by_keys,
    group_by_values,
    pad_batch,
    sample,
    triton_context,
)

models = Repository()

_X = Tensor(name="x", dtype=np.float32, shape=(1,))
_Y = Tensor(name="y", dtype=np.float32, shape=(1,))


@models.model("Batch", inputs=[_X], outputs=[_Y], config=ModelConfig(max_batch_size=8))
@batch
def double(x):
    return {"y": x * 2}


@models.model(
    "Sample",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="n", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False),
)
@sample
def cumulative(x):
    return [np.cumsum(x), np.array([len(x)])]  # a list: outputs in declared order


@models.model(
    "GroupByKeys",
    inputs=[_X, Tensor(name="offset", dtype=np.float32, shape=(1,), optional=True)],
    outputs=[_Y],
    config=ModelConfig(max_batch_size=8),
)
@group_by_keys
@batch
def shift(x, offset=None):
    return {"y": x if offset is None else x + offset}


@models.model(
    "GroupByValues",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,)), Tensor(name="mode", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="out", dtype=bytes, shape=(1,)), Tensor(name="codes", dtype=np.int32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
@group_by_values("mode", pad_fn=ConstantPadder(-1))
def convert(text, mode):
    word = mode[0, 0]  # one mode per call: the rows were grouped by it
    change = np.char.upper if word == b"up" else np.char.lower
    codes = np.full((len(text), len(word)), len(word), dtype=np.int32)  # trailing axis differs per group
    return {"out": change(text.astype(bytes)).astype(object), "codes": codes}


@models.model(
    "FillOptionals",
    inputs=[_X, Tensor(name="temperature", dtype=np.float32, shape=(1,), optional=True)],
    outputs=[_Y],
    config=ModelConfig(max_batch_size=8),
)
@fill_optionals(temperature=np.array([0.5], dtype=np.float32))
@batch
def heat(x, temperature):
    return {"y": x * temperature}


@models.model(
    "PadBatch",
    inputs=[_X],
    outputs=[_Y, Tensor(name="seen", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(preferred_batch_size=[4])),
)
@batch
@pad_batch
def fixed_size(x):
    return {"y": x + 1, "seen": np.full((len(x), 1), len(x))}


@models.model(
    "FirstValue",
    inputs=[_X, Tensor(name="scale", dtype=np.float32, shape=(1,))],
    outputs=[_Y, Tensor(name="scalar", dtype=np.bool_, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
@first_value("scale")
def scale_by(x, scale):
    return {"y": x * scale, "scalar": np.full((len(x), 1), np.isscalar(scale))}


class Described:
    """A method of an instance, decorated: the context is found through the instance."""

    prefix = b"model:"

    @batch
    @triton_context
    def infer(self, x, triton_context):
        config = triton_context.model_config
        name = self.prefix + config.model_name.encode()
        described = f"{[t.name for t in config.inputs]}/{config.max_batch_size}/{triton_context.instance_kind}"
        return {
            "name": np.array([[name]] * len(x), dtype=object),
            "described": np.array([[described.encode()]] * len(x), dtype=object),
        }


models.bind(
    model_name="TritonContext",
    infer_func=Described().infer,
    inputs=[_X],
    outputs=[Tensor(name="name", dtype=bytes, shape=(1,)), Tensor(name="described", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
