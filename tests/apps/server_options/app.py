"""Models that depend on tritonserver options: the response cache and the rate limiter.

``Cached`` answers how many times its callable ran; with the cache on, identical requests reach it once.
``Limited`` has two instances that each need the one ``slot`` there is (``RateLimiter``): with the rate limiter on,
they never execute at once. Each answers when it started and ended (``time.time()``, this machine's clock: the
tests run the server here or in a container on this host) and which instance ran it.
"""

import os
import time

import numpy as np

from repogen import InstanceGroup, InvalidArgumentError, ModelConfig, RateLimiter, Repository, ServerOptions, Tensor

models = Repository(server_options=ServerOptions(response_cache_byte_size=8 << 20))

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
CALLS = []


@models.model(
    "Cached",
    inputs=X,
    outputs=[Tensor(name="calls", dtype=np.int64, shape=(1,))],
    config=ModelConfig(batching=False, response_cache=True),
)
def cached(requests):
    if any(r["x"][0] < 0 for r in requests):
        raise InvalidArgumentError("x must be >= 0")  # Triton caches this error as an empty answer (known issue)
    CALLS.extend(requests)
    return [{"calls": np.array([len(CALLS)], dtype=np.int64)} for _ in requests]


@models.model(
    "Limited",
    inputs=X,
    outputs=[Tensor(name="span", dtype=np.float64, shape=(2,)), Tensor(name="pid", dtype=np.int64, shape=(1,))],
    config=ModelConfig(
        batching=False,
        instance_groups=[InstanceGroup(count=2, rate_limiter=RateLimiter(resources={"slot": 1}))],
    ),
)
def limited(requests):
    start = time.time()
    time.sleep(0.3)
    span = np.array([start, time.time()])
    return [{"span": span, "pid": np.array([os.getpid()], dtype=np.int64)} for _ in requests]
