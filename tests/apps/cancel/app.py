"""Streams and batches whose clients leave: each model counts what it did, for the tests to ask.

A model answers ``n = -1`` with what it counted since it was last asked: ``[produced, after_cancel, closed]``
for the generators (tokens made, tokens made while ``request.is_cancelled()`` was already True, finally:
blocks run), and for ``Queued`` the number of requests the callable got. Counting happens in the model's own
stub, so the numbers are the model's, not a client's clock.
"""

import asyncio
import time

import numpy as np

from repogen import DynamicBatcher, ModelConfig, QueuePolicy, Repository, Tensor, TimeoutAction, batch

models = Repository()

DELAY_S = 0.02
REPORT = -1
_IO = {
    "inputs": [Tensor(name="n", dtype=np.int32, shape=(1,))],
    "outputs": [Tensor(name="token", dtype=np.int32, shape=(-1,))],
    "config": ModelConfig(batching=False),
}
_stats = {"produced": 0, "after_cancel": 0, "closed": 0}


def _report():
    values = [_stats["produced"], _stats["after_cancel"], _stats["closed"]]
    _stats.update(produced=0, after_cancel=0, closed=0)
    return [{"token": np.array(values, np.int32)}]


def _made_one(request):
    _stats["produced"] += 1
    _stats["after_cancel"] += bool(request.is_cancelled())


@models.model("Tokens", **_IO)
def tokens(requests):
    """A token every DELAY_S seconds, n of them."""
    request = requests[0]
    n = int(request["n"][0])
    if n == REPORT:
        yield _report()
        return
    try:
        for i in range(n):
            time.sleep(DELAY_S)
            _made_one(request)
            yield [{"token": np.array([i], np.int32)}]
    finally:
        _stats["closed"] += 1


class AsyncTokens:
    """The same as a class whose ``__call__`` is an async generator."""

    async def __call__(self, requests):
        request = requests[0]
        n = int(request["n"][0])
        if n == REPORT:
            yield _report()
            return
        try:
            for i in range(n):
                await asyncio.sleep(DELAY_S)
                _made_one(request)
                yield [{"token": np.array([i], np.int32)}]
        finally:
            _stats["closed"] += 1


models.bind("AsyncTokens", AsyncTokens, **_IO)


@models.model("Relay", **_IO)
def relay(requests):
    """Re-streams Tokens through BLS: cancelling Relay's request must stop Tokens too."""
    request = requests[0]
    n = int(request["n"][0])
    if n == REPORT:
        yield _report()
        return
    try:
        for chunk in tokens.stream(n=request["n"]):
            _made_one(request)
            yield [{"token": chunk["token"]}]
    finally:
        _stats["closed"] += 1


_served = {"requests": 0}


@models.model(
    "Queued",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="served", dtype=np.int32, shape=(1,))],
    config=ModelConfig(max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=0)),
)
@batch
def queued(n):
    """Holds its only instance for n[0] ms; answers REPORT with how many requests its callable got."""
    if n[0, 0] == REPORT:
        served, _served["requests"] = _served["requests"], 0
        return {"served": np.full((len(n), 1), served, np.int32)}
    _served["requests"] += len(n)
    time.sleep(int(n.max()) / 1000)
    return {"served": np.full((len(n), 1), len(n), np.int32)}


_expiring = {"requests": 0}


@models.model(
    "Expiring",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="served", dtype=np.int32, shape=(1,))],
    config=ModelConfig(
        max_batch_size=8,
        batcher=DynamicBatcher(
            default_queue_policy=QueuePolicy(
                timeout_action=TimeoutAction.REJECT, default_timeout_microseconds=1_500_000, allow_timeout_override=True
            )
        ),
    ),
)
@batch
def expiring(n):
    """As Queued, with a queue policy: requests waiting over 1.5 s (or their own, shorter timeout) are rejected."""
    if n[0, 0] == REPORT:
        served, _expiring["requests"] = _expiring["requests"], 0
        return {"served": np.full((len(n), 1), served, np.int32)}
    _expiring["requests"] += len(n)
    time.sleep(int(n.max()) / 1000)
    return {"served": np.full((len(n), 1), len(n), np.int32)}


_burst = {"produced": 0, "after_cancel": 0, "closed": 0}
SEEN = -2
_streams: dict[int, list[int]] = {}  # a client's stream number (its "stream" parameter) -> [tokens made, closed]


@models.model("Burst", **_IO)
def burst(requests):
    """n tokens 2 ms apart, for many streams at once; REPORT: [produced, after_cancel, closed] since last asked.

    A request with a ``stream`` parameter is remembered under it: SEEN with that parameter answers ``[got it,
    tokens made, finally: run]``, so that a stream that never answered its client can be told apart from a
    request that never reached the model.
    """
    request = requests[0]
    n = int(request["n"][0])
    if n == REPORT:
        values = [_burst["produced"], _burst["after_cancel"], _burst["closed"]]
        _burst.update(produced=0, after_cancel=0, closed=0)
        yield [{"token": np.array(values, np.int32)}]
        return
    stream = request.parameters.get("stream")
    if n == SEEN:
        sent, closed = _streams.get(stream, (-1, 0))
        yield [{"token": np.array([stream in _streams, sent, closed], np.int32)}]
        return
    record = _streams.setdefault(stream, [0, 0]) if stream is not None else [0, 0]
    try:
        for i in range(n):
            time.sleep(0.002)
            _burst["produced"] += 1
            _burst["after_cancel"] += bool(request.is_cancelled())
            record[0] += 1  # counted before the yield: the step's send follows it
            yield [{"token": np.array([i], np.int32)}]
    finally:
        _burst["closed"] += 1
        record[1] = 1
