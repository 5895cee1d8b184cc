"""``$BENCH_MODELS`` copies of one small model: the build-time and start-up benchmarks."""

from __future__ import annotations

import os

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def add_sub(a, b):
    return {"add": a + b, "sub": a - b}


for _i in range(int(os.environ.get("BENCH_MODELS", "10"))):
    models.bind(
        model_name=f"AddSub{_i:03d}",
        infer_func=add_sub,
        inputs=[Tensor(name="a", dtype=np.float32, shape=(-1,)), Tensor(name="b", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="add", dtype=np.float32, shape=(-1,)), Tensor(name="sub", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=64, batcher=DynamicBatcher(max_queue_delay_microseconds=100)),
        strict=True,
    )
