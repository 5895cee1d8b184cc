"""Quickstart: two models, one numeric and batched, one on text (BYTES).

repogen build examples/quickstart/app.py:models -o build/repo
"""

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def add_sub(a, b):
    return {"add": a + b, "sub": a - b}


models.bind(
    model_name="AddSub",
    infer_func=add_sub,
    inputs=[Tensor(name="a", dtype=np.float32, shape=(-1,)), Tensor(name="b", dtype=np.float32, shape=(-1,))],
    outputs=[
        Tensor(name="add", dtype=np.float32, shape=(-1,)),
        Tensor(name="sub", dtype=np.float32, shape=(-1,)),
    ],
    config=ModelConfig(max_batch_size=64, batcher=DynamicBatcher(max_queue_delay_microseconds=100)),
    strict=True,
)


@models.model(
    "Shout",
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="loud", dtype=bytes, shape=(1,)), Tensor(name="length", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=16),
    strict=True,
)
@batch
def shout(text):
    loud = np.array([[t.upper() + b"!"] for t in text[:, 0]], dtype=object)
    length = np.array([[len(t)] for t in text[:, 0]], dtype=np.int64)
    return {"loud": loud, "length": length}
