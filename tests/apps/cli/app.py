"""Models for `repogen infer`, `perf` and `status` tests: typed inputs, outputs declared out of name order, a stream."""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Typed",
    inputs=[
        Tensor(name="n", dtype=np.int64, shape=(1,)),
        Tensor(name="u", dtype=np.uint8, shape=(1,)),
        Tensor(name="x", dtype=np.float32, shape=(-1,)),
    ],
    outputs=[Tensor(name="zeta", dtype=np.float32, shape=(-1,)), Tensor(name="alpha", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def typed(n, u, x):
    return {"zeta": x * n, "alpha": n + u.astype(np.int64)}


@models.model(
    "Count",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="i", dtype=np.int32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def count(requests):
    """A decoupled model: one response per number up to n."""
    for i in range(1, int(requests[0]["n"][0]) + 1):
        yield [{"i": np.array([i], np.int32)}]
