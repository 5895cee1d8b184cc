"""A framework's tensors through every path, on the CPU: array_api_strict stands for torch or cupy.

It is an array-API library that holds its arrays in host memory and exchanges them through DLPack, pure
Python over numpy, so the build ships it inside the repository and a numpy-only server runs it. What the
runtime does with it is what it does with torch's and cupy's tensors (tests/gpu serves those on a GPU).
Each model reports what kind of array its callable was handed (``kind``: 1 the framework's, 0 numpy).
"""

import array_api_strict as xp
import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch, fill_optionals, group_by_values, pad_batch

models = Repository()

F32 = np.float32
X = [Tensor(name="x", dtype=F32, shape=(-1,))]
Y = [Tensor(name="y", dtype=F32, shape=(-1,))]
KIND = Tensor(name="kind", dtype=np.int64, shape=(1,))
# requests that arrive together (a test sends them at once) wait for each other and run as one batch
GATHER = DynamicBatcher(max_queue_delay_microseconds=300_000)
FRAMEWORK = "array_api_strict"


def kind(value):
    return 1 if type(value).__module__.startswith(FRAMEWORK) else 0


def kinds(rows, value):
    return xp.full((rows, 1), kind(value), dtype=xp.int64)


@models.model(
    "FrameworkOut",
    inputs=X,
    outputs=[*Y, Tensor(name="rows", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=16, batcher=GATHER),
    strict=True,
)
@batch
def framework_out(x):
    """numpy in, the framework's arrays out: checked like numpy, then sent through DLPack."""
    return {"y": xp.asarray(x) * 2, "rows": xp.full((x.shape[0], 1), x.shape[0], dtype=xp.int64)}


@models.model(
    "FrameworkIn",
    inputs=[*X, Tensor(name="k", dtype=np.int32, shape=(1,), optional=True)],
    outputs=[*Y, KIND, Tensor(name="rows", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4, batcher=GATHER, tensors=FRAMEWORK),
    strict=True,
)
@fill_optionals(k=np.array([1], dtype=np.int32))
@batch
@group_by_values("k")
@pad_batch
def framework_in(x, k):
    """The framework's arrays in: merged by @batch, grouped and padded on them, and cut back to each request."""
    rows = x.shape[0]  # pad_batch made it max_batch_size
    return {
        "y": x * xp.astype(k, xp.float32),
        "kind": kinds(rows, x) + kinds(rows, k),
        "rows": xp.full((rows, 1), rows, dtype=xp.int64),
    }


@models.model("Plus", inputs=X, outputs=[*Y, KIND], config=ModelConfig(max_batch_size=8))
@batch
def plus(x):
    return {"y": xp.asarray(x) + 1, "kind": kinds(x.shape[0], x)}


@models.model("Times", inputs=X, outputs=[*Y, KIND], config=ModelConfig(max_batch_size=8, tensors=FRAMEWORK))
@batch
def times(x):
    return {"y": x * 3, "kind": kinds(x.shape[0], x)}


@models.model("Minus", inputs=X, outputs=[*Y, KIND], config=ModelConfig(max_batch_size=8))
@batch
def minus(x):
    return {"y": x - 2, "kind": xp.asarray(np.full((x.shape[0], 1), kind(x), dtype=np.int64))}


def chain(x):
    first = plus(x=x)
    second = times(x=first["y"])
    third = minus(x=second["y"])
    return {"y": third["y"], "k1": first["kind"], "k2": second["kind"], "k3": third["kind"]}


CHAIN_OUT = [*Y, *(Tensor(name=f"k{i}", dtype=np.int64, shape=(1,)) for i in (1, 2, 3))]
models.ensemble("Chain", inputs=X, outputs=CHAIN_OUT, config=ModelConfig(max_batch_size=8))(chain)
models.ensemble("ChainFused", inputs=X, outputs=CHAIN_OUT, config=ModelConfig(max_batch_size=8), fuse=True)(chain)


@models.model("CallsNumpy", inputs=X, outputs=[*Y, KIND], config=ModelConfig(max_batch_size=8, tensors=FRAMEWORK))
@batch
def calls_numpy(x):
    """A framework caller: a numpy model's outputs come back as the framework's arrays."""
    out = minus(x=x)["y"]
    return {"y": out, "kind": kinds(x.shape[0], out)}


@models.model("CallsFramework", inputs=X, outputs=[*Y, KIND], config=ModelConfig(max_batch_size=8))
@batch
def calls_framework(x):
    """A numpy caller: the framework model's outputs come back as numpy."""
    out = times(x=x)["y"]
    return {"y": out, "kind": np.full((x.shape[0], 1), kind(out), dtype=np.int64)}


@models.model(
    "Counts",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="count", dtype=F32, shape=(1,))],
    config=ModelConfig(batching=False, tensors=FRAMEWORK),
)
def counts(requests):
    """Decoupled: each response a framework array."""
    for value in range(int(requests[0]["n"][0])):
        yield [{"count": xp.asarray([float(value)], dtype=xp.float32)}]
