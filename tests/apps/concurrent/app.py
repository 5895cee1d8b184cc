"""Async callables that wait: each model counts what it saw in its own stub, for
tests/integration/test_concurrency_served.py.

``Gather`` is the proof that needs no clock: each call waits until ``n`` calls are in flight on its instance at once
and fails after ``PATIENCE_S`` otherwise, so a server that runs one call at a time answers every request with that
failure. ``Wait`` awaits 100 ms (the issue's measure) and says how many calls were in flight when it ended.
"""

import asyncio

import numpy as np

from repogen import ModelConfig, Repository, Tensor

models = Repository()

PATIENCE_S = 10.0
WAIT_S = 0.1
REPORT = -1.0  # x = -1 asks a model for what it counted since it was last asked
XN = [Tensor(name="x", dtype=np.float32, shape=(1,)), Tensor(name="n", dtype=np.int32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]
YPEAK = [*Y, Tensor(name="peak", dtype=np.int32, shape=(1,))]
ONE_AT_A_TIME = ModelConfig(batching=False)


class Rendezvous:
    """Calls on one instance that wait for each other: ``meet(n)`` returns once ``n`` of them are waiting."""

    def __init__(self):
        self.waiting = []
        self.in_flight = 0
        self.peak = 0

    async def meet(self, n):
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        if len(self.waiting) >= n:
            for waiter in self.waiting:
                waiter.done() or waiter.set_result(None)
            self.waiting = []
        try:
            await asyncio.wait_for(future, PATIENCE_S)
        except asyncio.TimeoutError:
            self.waiting.remove(future)
            raise RuntimeError(
                f"waited {PATIENCE_S} s for {n} calls in flight at once; the most seen was {self.peak}"
            ) from None

    def enter(self):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)


class Gather(Rendezvous):
    """y = 2x, once n calls are in flight at once (and ``AFTER_S`` later)."""

    AFTER_S = 0.0

    async def __call__(self, requests):
        (request,) = requests
        self.enter()
        try:
            await self.meet(int(request["n"][0]))
            await asyncio.sleep(self.AFTER_S)
            return [{"y": request["x"] * 2}]
        finally:
            self.in_flight -= 1


models.bind("Gather", Gather, inputs=XN, outputs=Y, config=ONE_AT_A_TIME)


class Wait(Rendezvous):
    """y = 2x after 100 ms; peak: the most calls this instance had in flight since it was last asked (x = -1)."""

    async def __call__(self, requests):
        (request,) = requests
        if request["x"][0] == REPORT:
            peak, self.peak = self.peak, 0
            return [{"y": request["x"], "peak": np.array([peak], np.int32)}]
        self.enter()
        try:
            await asyncio.sleep(WAIT_S)
            return [{"y": request["x"] * 2, "peak": np.array([self.peak], np.int32)}]
        finally:
            self.in_flight -= 1


models.bind("Wait", Wait, inputs=[XN[0]], outputs=YPEAK, config=ONE_AT_A_TIME)
models.bind("Bounded", Wait, inputs=[XN[0]], outputs=YPEAK, config=ModelConfig(batching=False, max_concurrency=4))


class Cancellable:
    """y = 2x after x seconds; x = -1 reports [finished, cancelled] (calls that ran to the end, and those whose
    ``await`` was cancelled because their client left)."""

    def __init__(self):
        self.finished = 0
        self.cancelled = 0

    async def __call__(self, requests):
        (request,) = requests
        if request["x"][0] == REPORT:
            counts, self.finished, self.cancelled = [self.finished, self.cancelled], 0, 0
            return [{"y": np.array(counts[:1], np.float32), "peak": np.array(counts[1:], np.int32)}]
        try:
            await asyncio.sleep(float(request["x"][0]))
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        self.finished += 1
        return [{"y": request["x"] * 2, "peak": np.zeros(1, np.int32)}]


models.bind("Cancellable", Cancellable, inputs=[XN[0]], outputs=YPEAK, config=ONE_AT_A_TIME)


@models.model("Failing", inputs=[XN[0]], outputs=Y, config=ONE_AT_A_TIME)
async def failing(requests):
    """y = 2x after 100 ms; a negative x fails its own request, and only it."""
    await asyncio.sleep(WAIT_S)
    (request,) = requests
    if request["x"][0] < 0:
        raise ValueError(f"negative x: {request['x'][0]}")
    return [{"y": request["x"] * 2}]


class Stream(Rendezvous):
    """An async generator: once n streams are in flight, 3 tokens x, x + 1, x + 2, 100 ms apart."""

    async def __call__(self, requests):
        (request,) = requests
        self.enter()
        try:
            await self.meet(int(request["n"][0]))
            for i in range(3):
                await asyncio.sleep(WAIT_S)
                yield [{"y": request["x"] + i}]
        finally:
            self.in_flight -= 1


models.bind("Stream", Stream, inputs=XN, outputs=Y, config=ONE_AT_A_TIME)


class Slow(Gather):
    AFTER_S = WAIT_S


Leaf = models.bind("Leaf", Slow, inputs=XN, outputs=Y, config=ONE_AT_A_TIME)
FAN_OUT = 8


@models.model("FanOut", inputs=[XN[0]], outputs=[Tensor(name="y", dtype=np.float32, shape=(FAN_OUT,))],
              config=ONE_AT_A_TIME)  # fmt: skip
async def fan_out(requests):
    """8 BLS calls of Leaf at once (asyncio.gather), each waiting until all 8 are in flight: y = 2 (x + i)."""
    (request,) = requests
    x = float(request["x"][0])
    n = np.array([FAN_OUT], np.int32)
    calls = [Leaf.infer_async(x=np.array([x + i], np.float32), n=n) for i in range(FAN_OUT)]
    answers = await asyncio.gather(*calls)
    return [{"y": np.concatenate([answer["y"] for answer in answers])}]


@models.model("Direct", inputs=[XN[0]], outputs=Y, config=ONE_AT_A_TIME)
async def direct(requests):
    """One BLS call of Leaf (n = 1: it waits for nothing), the fan-out's unit of time."""
    (request,) = requests
    return [await Leaf.infer_async(x=request["x"], n=np.array([1], np.int32))]
