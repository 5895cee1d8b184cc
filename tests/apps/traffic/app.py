"""Small models for the bad-traffic, soak and release tests.

Every model also returns ``calls``: how many times its callable has run in this stub process. A
test reads it before and after a bad request to prove whether the request reached Python at all
(rejected by tritonserver) or was answered by repogen's runtime.
"""

import json

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()

_CALLS = [0]  # per stub process: the callable is pickled by value, this list with it


def _count() -> int:
    _CALLS[0] += 1
    return _CALLS[0]


_CALLS_OUT = Tensor(name="calls", dtype=np.int64, shape=(1,))


@batch
def double(x):
    return {"y": x * 2, "calls": np.full((len(x), 1), _count(), dtype=np.int64)}


# "Gathered" is the same model, but its batcher waits up to 200 ms so that concurrent requests share one execute().
for _name, _delay_us in (("Batched", 500), ("Gathered", 200_000)):
    models.bind(
        _name,
        infer_func=double,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(2,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(2,)), _CALLS_OUT],
        config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=_delay_us)),
        strict=True,
    )


@models.model(
    "Unbatched",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(2,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(2,)), _CALLS_OUT],
    config=ModelConfig(batching=False),
    strict=True,
)
def negate(requests):
    calls = np.array([_count()], dtype=np.int64)
    return [{"y": -request["x"], "calls": calls} for request in requests]


@models.model(
    "Scaled",
    inputs=[
        Tensor(name="x", dtype=np.float32, shape=(-1,)),
        Tensor(name="scale", dtype=np.float32, shape=(1,), optional=True),
    ],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), _CALLS_OUT],
    config=ModelConfig(batching=False),
    strict=True,
)
def scaled(requests):
    calls = np.array([_count()], dtype=np.int64)
    return [{"y": r["x"] * (r["scale"] if "scale" in r else np.float32(1)), "calls": calls} for r in requests]


@models.model(
    "Params",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="parameters", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False),
)
def params(requests):
    texts = [json.dumps(r.parameters, sort_keys=True).encode() for r in requests]
    return [{"parameters": np.array([text], dtype=object)} for text in texts]


@models.model(
    "Streamed",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(2,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(2,))],
    config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=200_000)),
)
def streamed(requests):
    """Decoupled and batched: two responses per request, ``x`` then ``2 * x``."""
    for step in (1, 2):
        yield [{"y": r["x"] * step} for r in requests]
