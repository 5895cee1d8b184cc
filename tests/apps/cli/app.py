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


# Every datatype numpy has, to and from the server as they are: `repogen infer`'s own HTTP client against gRPC's.
EVERY = {
    "BOOL": np.bool_, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
    "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "FP16": np.float16, "FP32": np.float32,
    "FP64": np.float64, "BYTES": np.bytes_,
}  # fmt: skip


@models.model(
    "Every",
    inputs=[Tensor(name=f"in_{name.lower()}", dtype=dtype, shape=(-1,)) for name, dtype in EVERY.items()],
    outputs=[Tensor(name=f"out_{name.lower()}", dtype=dtype, shape=(-1,)) for name, dtype in EVERY.items()],
    config=ModelConfig(batching=False),
)
def every(requests):
    return [{name.replace("in_", "out_"): value for name, value in request.items()} for request in requests]
