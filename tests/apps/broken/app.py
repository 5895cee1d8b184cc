"""One model that loads and one whose constructor fails, as a missing weights file would (serve's failure lines)."""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Good",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def good(x):
    return {"y": x * 2}


class Broken:
    def __init__(self, context):
        raise RuntimeError("weights file missing")

    def __call__(self, requests):
        return [{"y": r["x"]} for r in requests]


models.bind(
    "Broken",
    infer_func=Broken,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
