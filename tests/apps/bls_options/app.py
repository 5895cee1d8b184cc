"""BLS calls that carry what a request can: a sequence, parameters, a version, a timeout; and the called model's
error codes (tests/integration/test_bls_options_served.py).

``Counter`` is a stateful sequence model (running sums by correlation id); ``Driver`` (async) and ``DriverSync``
each take five values and a sequence id and walk ``Counter`` through a five-request sequence, returning its running
sums. ``StreamRelay`` and ``StreamTimeout`` call streams with parameters and with a timeout.
"""

import asyncio
import json

import numpy as np

from repogen import ModelCallError, ModelCallTimeout, ModelConfig, Repository, SequenceBatcher, Tensor, VersionPolicy

models = Repository()

ONE = ModelConfig(batching=False)
STEPS = 5
X1 = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y1 = [Tensor(name="y", dtype=np.float32, shape=(1,))]


class Counter:
    """Per-sequence running sums, as Triton's sequence batcher hands the requests of each sequence over."""

    def __init__(self):
        self.sums = {}

    def __call__(self, requests):
        results = []
        for request in requests:
            sequence = int(request["CORRID"].ravel()[0])
            if request["START"].ravel()[0]:
                self.sums[sequence] = 0.0
            self.sums[sequence] += float(request["x"].ravel()[0])
            results.append({"total": np.array([[self.sums[sequence]]], np.float32)})
            if request["END"].ravel()[0]:
                del self.sums[sequence]
        return results


counter = models.bind(
    "Counter",
    Counter,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))],
    config=ModelConfig(
        max_batch_size=4,
        batcher=SequenceBatcher(
            strategy="oldest", ready=None, max_candidate_sequences=16, max_queue_delay_microseconds=0
        ),
    ),
)
DRIVE = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(STEPS,)), Tensor(name="cid", dtype=np.uint64, shape=(1,))],
    "outputs": [Tensor(name="totals", dtype=np.float32, shape=(STEPS,))],
    "config": ONE,
}


def _step(request, i):
    return counter.sequence(int(request["cid"][0]), start=i == 0, end=i == STEPS - 1), request["x"][i : i + 1][None]


@models.model("Driver", **DRIVE)
async def driver(requests):
    (request,) = requests
    totals = []
    for i in range(STEPS):
        call, x = _step(request, i)
        totals.append((await call.infer_async(x=x))["total"].ravel()[0])
    return [{"totals": np.array(totals, np.float32)}]


@models.model("DriverSync", **DRIVE)
def driver_sync(requests):
    (request,) = requests
    totals = []
    for i in range(STEPS):
        call, x = _step(request, i)
        totals.append(call(x=x)["total"].ravel()[0])
    return [{"totals": np.array(totals, np.float32)}]


PARAMS = [Tensor(name="params", dtype=bytes, shape=(1,))]


@models.model("Echo", inputs=X1, outputs=PARAMS, config=ONE)
def echo(requests):
    """Its own request's parameters, as JSON."""
    return [{"params": np.array([json.dumps(r.parameters, sort_keys=True).encode()], dtype=object)} for r in requests]


@models.model("Relay", inputs=X1, outputs=PARAMS, config=ONE)
def relay(requests):
    """Echo called with this request's parameters handed on, and one of its own."""
    (request,) = requests
    return [echo.parameters(request.parameters).parameters({"relayed": True})(x=request["x"])]


@models.model("Tokens", inputs=X1, outputs=Y1, config=ONE)
def tokens(requests):
    """As many tokens as its request's parameter ``n`` says, each x + i."""
    (request,) = requests
    for i in range(int(request.parameters["n"])):
        yield [{"y": request["x"] + i}]


@models.model("StreamRelay", inputs=X1, outputs=Y1, config=ONE)
async def stream_relay(requests):
    """Tokens' stream, asked for int(x) tokens through a parameter, relayed token by token."""
    (request,) = requests
    async for token in tokens.parameters({"n": int(request["x"][0])}).stream_async(x=request["x"]):
        yield [token]


class Versioned:
    def __init__(self, add):
        self.add = add

    def __call__(self, requests):
        return [{"y": r["x"] + self.add} for r in requests]


models.bind("Versioned", lambda requests: Versioned(1)(requests), X1, Y1, config=ModelConfig(
    batching=False, version_policy=VersionPolicy.all()), model_version=1)  # fmt: skip
versioned = models.bind("Versioned", lambda requests: Versioned(2)(requests), X1, Y1, config=ModelConfig(
    batching=False, version_policy=VersionPolicy.all()), model_version=2)  # fmt: skip


@models.model("Picker", inputs=X1, outputs=[Tensor(name="y", dtype=np.float32, shape=(3,))], config=ONE)
def picker(requests):
    """Versioned's version 1, version 2, and its latest, each called with x."""
    (request,) = requests
    x = request["x"]
    answers = [versioned.version(1)(x=x), versioned.version(2)(x=x), versioned(x=x)]
    return [{"y": np.concatenate([answer["y"] for answer in answers])}]


@models.model("Sleepy", inputs=X1, outputs=Y1, config=ONE)
async def sleepy(requests):
    """y = x after x seconds."""
    (request,) = requests
    await asyncio.sleep(float(request["x"][0]))
    return [{"y": request["x"]}]


CODE = [Tensor(name="code", dtype=bytes, shape=(-1,))]


@models.model("Impatient", inputs=X1, outputs=CODE, config=ONE)
def impatient(requests):
    """Sleepy for x seconds with a 0.5 s timeout: 'ok', or the error's type and code."""
    (request,) = requests
    try:
        sleepy.timeout(0.5)(x=request["x"])
        found = ["ok"]
    except ModelCallTimeout as exc:
        found = [type(exc).__name__, exc.code, str(isinstance(exc, TimeoutError))]
    return [{"code": np.array([s.encode() for s in found], dtype=object)}]


@models.model("ImpatientAsync", inputs=X1, outputs=CODE, config=ONE)
async def impatient_async(requests):
    """Impatient, awaiting."""
    (request,) = requests
    try:
        await sleepy.timeout(0.5).infer_async(x=request["x"])
        found = ["ok"]
    except ModelCallTimeout as exc:
        found = [type(exc).__name__, exc.code, str(isinstance(exc, TimeoutError))]
    return [{"code": np.array([s.encode() for s in found], dtype=object)}]


@models.model("Uncaught", inputs=X1, outputs=Y1, config=ONE)
def uncaught(requests):
    """Sleepy with a 0.5 s timeout, not caught: the client's answer is the timeout."""
    (request,) = requests
    return [sleepy.timeout(0.5)(x=request["x"])]


@models.model("SlowTokens", inputs=X1, outputs=Y1, config=ONE)
async def slow_tokens(requests):
    """A token every x seconds, 10 of them."""
    (request,) = requests
    for i in range(10):
        await asyncio.sleep(float(request["x"][0]))
        yield [{"y": np.array([i], np.float32)}]


@models.model("StreamTimeout", inputs=X1, outputs=CODE, config=ONE)
def stream_timeout(requests):
    """SlowTokens (a token every x s) read with a 1 s timeout: the tokens read, then the timeout's code."""
    (request,) = requests
    found = []
    try:
        for token in slow_tokens.timeout(1.0).stream(x=request["x"]):
            found.append(str(int(token["y"][0])))
    except ModelCallTimeout as exc:
        found.append(exc.code)
    return [{"code": np.array([s.encode() for s in found], dtype=object)}]


@models.model("Strict", inputs=[Tensor(name="x", dtype=np.float32, shape=(2,))], outputs=Y1, config=ONE)
def strict(requests):
    (request,) = requests
    if request["x"][0] < 0:
        raise ValueError("negative")
    return [{"y": request["x"][:1]}]


@models.model("Codes", inputs=X1, outputs=CODE, config=ONE)
def codes(requests):
    """The codes of Strict's errors: a wrong shape (Triton refuses it) and a callable that raises."""
    found = []
    for x in (np.zeros(3, np.float32), np.array([-1.0, 0.0], np.float32)):
        try:
            strict(x=x)
            found.append("ok")
        except ModelCallError as exc:
            found.append(f"{exc.code}:{exc.model}:{exc}")
    return [{"code": np.array([s.encode() for s in found], dtype=object)} for _ in requests]
