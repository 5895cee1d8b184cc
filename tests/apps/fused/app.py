"""A pipeline served twice: scheduled by Triton (``Pipeline``) and fused into one model (``Fused``).

The steps cover what a fused model must run exactly as Triton would: two inputs fanning out to
two steps, a class step reading a file it ships, a non-strict step whose float64 result becomes
the declared FP32, an async step writing into an input the answer also holds, BYTES between
steps, request parameters, and a step that fails for some rows' values (a negative ``x``).
``Chain`` / ``FusedChain`` are a pipeline of ``@batch`` functions only, which a fused model runs
written out in its ``model.py``.
"""

import numpy as np

from repogen import ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()

F32 = np.float32
BATCHED = ModelConfig(max_batch_size=8)


class Scale:
    """``y = x * scale``, the scale read from the shipped ``scale.txt`` when the instance starts."""

    def __init__(self, context: ModelContext):
        with open(context.path("scale.txt"), encoding="utf-8") as file:
            self.scale = float(file.read())

    @batch
    def __call__(self, x):
        if (x < 0).any():
            raise ValueError(f"negative x: {x.min()}")
        return {"y": x.astype(np.float64) * self.scale}  # float64: converted to the declared FP32


scale = models.bind(
    "Scale",
    infer_func=Scale,
    inputs=[Tensor(name="x", dtype=F32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=F32, shape=(-1,))],
    config=BATCHED,
    files=["scale.txt"],
)


@models.model(
    "Combine",
    inputs=[Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))],
    outputs=[Tensor(name="total", dtype=F32, shape=(1,)), Tensor(name="label", dtype=bytes, shape=(1,))],
    config=BATCHED,
)
@batch
async def combine(y, b):
    y += b  # in place: the pipeline's answer "scaled" is this same tensor and must not see it
    total = y.sum(axis=1, keepdims=True)
    return {"total": total, "label": np.array([[f"{t:.2f}".encode()] for t in total[:, 0]], dtype=object)}


@models.model(
    "Tag",
    inputs=[Tensor(name="label", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="tagged", dtype=bytes, shape=(1,))],
    config=BATCHED,
)
def tag(requests):
    """Undecorated: one dict per request, with the request's ``prefix`` parameter when it has one."""
    return [
        {"tagged": np.array([[r.parameters.get("prefix", "=").encode() + w[0]] for w in r["label"]], dtype=object)}
        for r in requests
    ]


INPUTS = [Tensor(name="x", dtype=F32, shape=(-1,)), Tensor(name="b", dtype=F32, shape=(-1,))]
OUTPUTS = [
    Tensor(name="scaled", dtype=F32, shape=(-1,)),
    Tensor(name="total", dtype=F32, shape=(1,)),
    Tensor(name="tagged", dtype=bytes, shape=(1,)),
]


def pipeline(x, b):
    scaled = scale(x=x)["y"]
    combined = combine(y=scaled, b=b)
    return {"scaled": scaled, "total": combined["total"], "tagged": tag(label=combined["label"])["tagged"]}


models.ensemble("Pipeline", inputs=INPUTS, outputs=OUTPUTS, config=BATCHED)(pipeline)
models.ensemble("Fused", inputs=INPUTS, outputs=OUTPUTS, config=BATCHED, fuse=True)(pipeline)


# A second pipeline whose steps are all @batch functions: fused, its model.py has them written out.
# Each takes the straight line for ordinary values and leaves it for some: Affine answers float64
# when a row exceeds 9 (converted to the declared FP32 by the general path from there), Norm fails
# a row whose sum is negative, and writes into its input "y", which the answer also holds.
@models.model("Affine", inputs=INPUTS, outputs=[Tensor(name="y", dtype=F32, shape=(-1,))], config=BATCHED)
@batch
def affine(x, b):
    y = x * 2 + b
    return {"y": y.astype(np.float64) if (x > 9).any() else y}


@models.model(
    "Norm",
    inputs=[Tensor(name="y", dtype=F32, shape=(-1,))],
    outputs=[Tensor(name="n", dtype=F32, shape=(1,))],
    config=BATCHED,
    strict=True,
)
@batch
def norm(y):
    y -= 1  # in place: the answer's "y" is this same tensor and must not see it
    n = y.sum(axis=1, keepdims=True)
    if (n < 0).any():
        raise ValueError(f"negative sum: {n.min():.1f}")
    return {"n": n}


def chain(x, b):
    y = affine(x=x, b=b)["y"]
    return {"y": y, "n": norm(y=y)["n"]}


CHAIN_OUTPUTS = [Tensor(name="y", dtype=F32, shape=(-1,)), Tensor(name="n", dtype=F32, shape=(1,))]
models.ensemble("Chain", inputs=INPUTS, outputs=CHAIN_OUTPUTS, config=BATCHED)(chain)
models.ensemble("FusedChain", inputs=INPUTS, outputs=CHAIN_OUTPUTS, config=BATCHED, fuse=True)(chain)
