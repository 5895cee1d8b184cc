"""A pipeline served twice: scheduled by Triton (``Pipeline``) and fused into one model (``Fused``).

The steps cover what a fused model must run exactly as Triton would: two inputs fanning out to
two steps, a class step reading a file it ships, a non-strict step whose float64 result becomes
the declared FP32, an async step writing into an input the answer also holds, BYTES between
steps, request parameters, and a step that fails for some rows' values (a negative ``x``).
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
