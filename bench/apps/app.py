"""The repogen side of the benchmark: every model the run serves that repogen generates.

The functions are deliberately trivial (or deliberately CPU-bound) so that what is measured is
the serving path — Triton, the Python backend and the wrapper around the callable — not the work.
``bench/pytriton_app.py`` binds the same functions to PyTriton and ``bench/handwritten/`` holds
the same work written directly against ``triton_python_backend_utils``.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

# Shared with the hand-written and PyTriton variants: change them together.
MAX_BATCH_SIZE = 64
CPU_LOOP = 200_000  # ~10 ms of pure-Python work on this machine's cores: holds the GIL throughout

models = Repository()

_VECTOR = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
_OUT = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
_BATCHED = ModelConfig(max_batch_size=MAX_BATCH_SIZE, batcher=DynamicBatcher())


@batch
def double(x):
    """The payload benchmark: one elementwise op, so the serving path dominates."""
    return {"y": x * 2}


models.bind(model_name="Double", infer_func=double, inputs=_VECTOR, outputs=_OUT, config=_BATCHED, strict=True)

# The same model handed exactly N requests per execute (callgrind's fixed batches, repogen/testing/callgrind.py): the
# batcher holds requests until N rows wait (each request is one row), so N sent together are one batch.
FIXED_BATCHES = (2, 4, 8)  # bench/repos.py's too
for _n in FIXED_BATCHES:
    _fixed = ModelConfig(
        max_batch_size=MAX_BATCH_SIZE,
        batcher=DynamicBatcher(preferred_batch_size=[_n], max_queue_delay_microseconds=10_000_000),
    )
    models.bind(model_name=f"DoubleX{_n}", infer_func=double, inputs=_VECTOR, outputs=_OUT, config=_fixed, strict=True)


def spin(n: int) -> int:
    """Pure-Python arithmetic: holds the GIL, so one stub process can use one core at most."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


@batch
def cpu_bound(x):
    spin(CPU_LOOP)
    return {"y": x}


# No dynamic batcher: two concurrent requests must be two executions, not one batch of two.
_UNBATCHED = ModelConfig(max_batch_size=MAX_BATCH_SIZE, batcher=None)
models.bind(model_name="Cpu1", infer_func=cpu_bound, inputs=_VECTOR, outputs=_OUT, config=_UNBATCHED)
models.bind(model_name="Cpu2", infer_func=[cpu_bound, cpu_bound], inputs=_VECTOR, outputs=_OUT, config=_UNBATCHED)


# Pipeline pieces: y = ((x + 1) * 3) - 2 in three steps, as Triton's ensemble ("Pipeline") and fused
# into one Python model ("Fused"). bench/handwritten holds the same work written by hand: three
# steps under a hand-written ensemble (HWPipeline) and one model (HWOne).
@batch
def step_add(x):
    return {"y": x + 1}


@batch
def step_mul(x):
    return {"y": x * 3}


@batch
def step_sub(x):
    return {"y": x - 2}


_steps = {}
for _name, _func in (("StepAdd", step_add), ("StepMul", step_mul), ("StepSub", step_sub)):
    _steps[_name] = models.bind(
        model_name=_name, infer_func=_func, inputs=_VECTOR, outputs=_OUT, config=_UNBATCHED, strict=True
    )


def _pipeline(x):
    return {"y": _steps["StepSub"](x=_steps["StepMul"](x=_steps["StepAdd"](x=x)["y"])["y"])["y"]}


models.ensemble("Pipeline", inputs=_VECTOR, outputs=_OUT, config=_UNBATCHED)(_pipeline)
models.ensemble("Fused", inputs=_VECTOR, outputs=_OUT, config=_UNBATCHED, fuse=True)(_pipeline)


# Streaming (decoupled) points, bench/streaming.py: a token generator, gRPC streams. bench/handwritten holds the
# same work written against triton_python_backend_utils (TokensHW, TokensHWPolling; SlowTokensHW...), each served
# under the config of the generated model here.
_TOKEN_IO = {
    "inputs": [Tensor(name="n", dtype=np.int32, shape=(1,))],
    "outputs": [Tensor(name="token", dtype=np.int32, shape=(-1,))],
    "config": ModelConfig(batching=False),
}


@models.model("Tokens", **_TOKEN_IO)
def tokens(requests):
    """n tokens as fast as they can be sent: what is measured is the serving path of a stream."""
    for i in range(int(requests[0]["n"][0])):
        yield [{"token": np.array([i], np.int32)}]


SLOW_TOKEN_S = 0.02  # a language model's token, roughly: the cancelled-stream point (bench/streaming.py)
_slow = {"produced": 0, "after_cancel": 0}


@models.model("SlowTokens", **_TOKEN_IO)
def slow_tokens(requests):
    """n tokens SLOW_TOKEN_S apart, counting those made after the request was cancelled; n = -1 answers
    ``[produced, after_cancel]`` since it was last asked (counted in the model's own stub, not by a clock)."""
    request = requests[0]
    n = int(request["n"][0])
    if n == -1:
        report = np.array([_slow["produced"], _slow["after_cancel"]], np.int32)
        _slow.update(produced=0, after_cancel=0)
        yield [{"token": report}]
        return
    for i in range(n):
        time.sleep(SLOW_TOKEN_S)
        _slow["produced"] += 1
        _slow["after_cancel"] += bool(request.is_cancelled())
        yield [{"token": np.array([i], np.int32)}]


# I/O-bound async callables, bench/waiting.py: a call that awaits WAIT_S (a database, an HTTP service) and answers
# y = x. ``Waiting`` is served as a decoupled model, one response and the final flag per request, beside the same
# work written by hand as python_backend's async decoupled execute (bench/handwritten/WaitingHW), both read over gRPC
# streams; ``WaitingRR`` is the request/response model plain clients call, beside its hand-written twin
# (WaitingRRHW: a loop of its own, answers through response senders) and ``WaitingOne`` (one request at a time, as
# an async callable was served before).
WAIT_S = 0.02
_WAIT_IO = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(1,))],
    "outputs": [Tensor(name="y", dtype=np.float32, shape=(1,))],
}


async def _waiting(requests):
    await asyncio.sleep(WAIT_S)
    return [{"y": request["x"]} for request in requests]


models.bind("Waiting", _waiting, **_WAIT_IO, config=ModelConfig(batching=False, decoupled=True, max_concurrency=64))
models.bind("WaitingRR", _waiting, **_WAIT_IO, config=ModelConfig(batching=False, max_concurrency=64))
models.bind("WaitingOne", _waiting, **_WAIT_IO, config=ModelConfig(batching=False, max_concurrency=1))
