"""Two echo models for measure_shm.py: one batching dynamically up to 16 requests, one without a batcher."""

from __future__ import annotations

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()
_X = Tensor(name="x", dtype=np.float32, shape=(-1,))
_Y = Tensor(name="y", dtype=np.float32, shape=(-1,))


@models.model("Batched", inputs=[_X], outputs=[_Y], config=ModelConfig(max_batch_size=16, batcher=DynamicBatcher()))
@batch
def batched(x):
    return {"y": x}


@models.model("Single", inputs=[_X], outputs=[_Y], config=ModelConfig(max_batch_size=16))
@batch
def single(x):
    return {"y": x}
