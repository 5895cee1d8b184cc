"""Models whose inputs the `repogen serve` banner must write out in full: fixed-size, variable and BYTES inputs,
batched (a leading batch dimension) and not (test_banner_examples_served.py)."""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Mixed",
    inputs=[
        Tensor(name="x", dtype=np.float32, shape=(3,)),
        Tensor(name="v", dtype=np.int32, shape=(-1,)),
        Tensor(name="text", dtype=bytes, shape=(1,)),
    ],
    outputs=[Tensor(name="total", dtype=np.float32, shape=(1,)), Tensor(name="loud", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def mixed(x, v, text):
    total = x.sum(axis=1, keepdims=True) + v.sum(axis=1, keepdims=True).astype(np.float32)
    loud = np.array([[t.upper()] for t in text[:, 0]], dtype=object)
    return {"total": total, "loud": loud}


@models.model(
    "Plain",
    inputs=[Tensor(name="m", dtype=np.float32, shape=(2, 2)), Tensor(name="words", dtype=bytes, shape=(-1,))],
    outputs=[Tensor(name="trace", dtype=np.float32, shape=(1,)), Tensor(name="count", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False),
)
def plain(requests):
    return [
        {"trace": np.array([np.trace(r["m"])], np.float32), "count": np.array([len(r["words"])], np.int64)}
        for r in requests
    ]
