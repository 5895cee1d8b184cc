"""BLS: a served callable calls another model of the repository through its handle.

    repogen build tests/golden/bls/app.py:models -o build/bls

Inside the server, ``double(x=...)`` is a Triton BLS request (``pb_utils.InferenceRequest(...)
.exec()``) that returns the called model's outputs as numpy arrays; unlike an ensemble, the
caller may branch on the values. ``infer_async`` lets an ``async def`` callable run calls
concurrently, and ``.outputs("y")`` asks for fewer outputs. The build records each model's calls
in its ``model.json`` and refuses calls to models that are not in the repository.
"""

import asyncio

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]


@models.model(
    "Double",
    inputs=X,
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="norm", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def double(x):
    return {"y": x * 2, "norm": np.linalg.norm(x, axis=1, keepdims=True)}


@models.model("DoubleUnlessSmall", inputs=X, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
@batch
def double_unless_small(x):
    if np.abs(x).max() < 1:  # a branch on data: only BLS can do this, an ensemble cannot
        return {"y": x}
    return {"y": double.outputs("y")(x=x)["y"]}


@models.model("Quadruple", inputs=X, outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])
@batch
async def quadruple(x):
    first, second = await asyncio.gather(double.infer_async(x=x), double.infer_async(x=x))
    return {"y": first["y"] + second["y"]}
