"""Warmup, the response cache and the rate limiter: Triton features PyTriton does not expose.

    repogen build tests/golden/warmup_cache_rate_limit/app.py:models -o build/warmup_cache_rate_limit

* ``Warmup``: requests Triton sends each instance before the model is READY (``model_warmup``),
  so the first client does not pay for lazy set-up. Inputs declared with -1 need a ``shapes``.
* ``response_cache=True``: Triton answers a repeated request from its cache without calling the
  model (the server needs ``--cache-config local,size=...``).
* ``RateLimiter``: an instance executes only while it holds the named resources (the server runs
  with ``--rate-limit=execution_count``); ``priority`` weighs instances against each other.
"""

import numpy as np

from repogen import InstanceGroup, ModelConfig, RateLimiter, Repository, Tensor, Warmup, batch

models = Repository()

_calls = []


@models.model(
    "Warmed",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,)), Tensor(name="flag", dtype=np.bool_, shape=(1,))],
    outputs=[Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=ModelConfig(
        max_batch_size=4,
        warmup=[
            Warmup(name="zeros", batch_size=2, count=3, shapes={"x": (5,)}),
            Warmup(name="random", batch_size=4, data="random", shapes={"x": (16,)}),
        ],
    ),
)
@batch
def warmed(x, flag):
    _calls.append(x.shape)  # warmup requests run in this process before the model is READY
    return {"calls": np.full((len(x), 1), len(_calls), dtype=np.int64)}


@models.model(
    "Cached",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False, response_cache=True),
)
def cached(requests):
    _calls.append(len(requests))
    return [{"calls": np.array([len(_calls)], dtype=np.int64)} for _ in requests]


@models.model(
    "Limited",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(
        max_batch_size=4,
        instance_groups=[
            InstanceGroup(
                count=2,
                rate_limiter=RateLimiter(resources={"R": 1}, global_resources={"SHARED": 2}, priority=1),
            )
        ],
    ),
)
@batch
def limited(x):
    return {"y": x + 1}
