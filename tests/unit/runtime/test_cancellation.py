"""Cancelled streams stop at their next step, in process (``repogen.local`` cancels when its reader stops early).

The same runtime code serves the real server, where tests/integration/test_cancellation_served.py proves it end to end.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.local import backend_shim
from repogen.runtime import cancellation, stream_cancellation
from repogen.runtime.request import Request

TOKENS = 200
READ = 5


def _stats() -> dict[str, int]:
    return {"produced": 0, "after_cancel": 0, "closed": 0}


def _repository(kind: str, stats: dict[str, int]) -> Repository:
    models = Repository()
    io = {
        "inputs": [Tensor(name="n", dtype=np.int32, shape=(1,))],
        "outputs": [Tensor(name="token", dtype=np.int32, shape=(1,))],
        "config": ModelConfig(batching=False),
    }

    def count(request: Request) -> None:
        stats["produced"] += 1
        stats["after_cancel"] += request.is_cancelled()

    if kind == "function":

        @models.model("Tokens", **io)
        def tokens(requests):
            try:
                for i in range(int(requests[0]["n"][0])):
                    time.sleep(0.005)
                    count(requests[0])
                    yield [{"token": np.array([i], np.int32)}]
            finally:
                stats["closed"] += 1

    elif kind == "async method":

        class AsyncTokens:
            async def __call__(self, requests):
                try:
                    for i in range(int(requests[0]["n"][0])):
                        await asyncio.sleep(0.005)
                        count(requests[0])
                        yield [{"token": np.array([i], np.int32)}]
                finally:
                    stats["closed"] += 1

        models.bind("Tokens", AsyncTokens, **io)
    else:  # a @batch generator: the decorator's own wrapper must pass the close on

        @models.model("Tokens", **{**io, "config": ModelConfig(max_batch_size=4)})
        @batch
        def tokens(n):
            try:
                for i in range(int(n[0, 0])):
                    time.sleep(0.005)
                    stats["produced"] += 1
                    yield {"token": np.full((len(n), 1), i, np.int32)}
            finally:
                stats["closed"] += 1

    return models


@pytest.mark.parametrize("kind", ["function", "async method", "batch"])
def test_a_reader_that_leaves_stops_the_generator_at_its_next_step(kind):
    stats = _stats()
    local = _repository(kind, stats).local()
    n = np.array([[TOKENS]] if kind == "batch" else [TOKENS], np.int32)
    stream = local.stream("Tokens", {"n": n})
    got = [int(r["token"].ravel()[0]) for r in itertools.islice(stream, READ)]
    stream.close()  # the reader leaves: the request is cancelled, the stream drained to its FINAL
    assert got == list(range(READ))
    assert stats["closed"] == 1, "the generator's finally: runs before the stream ends"
    assert stats["produced"] <= READ + 2, stats  # the one in flight, and at most one after the cancellation
    assert stats["after_cancel"] <= 1, stats


def test_a_stream_read_to_its_end_is_whole():
    stats = _stats()
    local = _repository("function", stats).local()
    got = [int(r["token"][0]) for r in local.stream("Tokens", {"n": np.array([7], np.int32)})]
    assert got == list(range(7))
    assert stats == {"produced": 7, "after_cancel": 0, "closed": 1}


class _Cancellable:
    def __init__(self, cancelled: bool, request_id: str = ""):
        self.cancelled = cancelled
        self._id = request_id

    def is_cancelled(self) -> bool:
        return self.cancelled

    def request_id(self) -> str:
        return self._id


class _OldRelease:
    """A request of a python_backend before r23.10: no is_cancelled, no request_id."""


def test_a_release_without_cancellation_never_cancels():
    assert cancellation.is_cancelled(_OldRelease()) is False
    assert Request({}, source=_OldRelease()).is_cancelled() is False
    assert Request({}).is_cancelled() is False


def test_a_bls_stream_token_cancels_its_callee_where_triton_cannot(tmp_path, monkeypatch):
    monkeypatch.setattr(cancellation.tempfile, "gettempdir", lambda: str(tmp_path))
    token = stream_cancellation.stream_token()
    callee = _Cancellable(False, token)
    assert not cancellation.is_cancelled(callee)
    stream_cancellation.cancel_stream(object(), token)  # an iterator without cancel(): python_backend before r25.04
    assert cancellation.is_cancelled(callee)
    assert not cancellation.is_cancelled(_Cancellable(False, "someone-else"))
    stream_cancellation.forget_stream(token)
    assert not cancellation.is_cancelled(callee)
    assert list(tmp_path.iterdir()) == []


def test_a_bls_stream_is_cancelled_through_triton_where_the_release_can(tmp_path, monkeypatch):
    monkeypatch.setattr(cancellation.tempfile, "gettempdir", lambda: str(tmp_path))

    class Iterator:
        cancelled = False

        def cancel(self):
            self.cancelled = True

    responses = Iterator()
    stream_cancellation.cancel_stream(responses, stream_cancellation.stream_token())
    assert responses.cancelled
    assert list(tmp_path.iterdir()) == []


# When a stream asks: after a slow step, and once its generator has worked STREAM_POLL_S; never for time spent
# sending (a send waits for the server). Both stream loops keep the rule: the plain generator's own
# (decoupled._stream_one) and the general one (an async generator here).
_PACE = {
    "inputs": [Tensor(name="n", dtype=np.int32, shape=(1,)), Tensor(name="ms", dtype=np.float32, shape=(1,))],
    "outputs": [Tensor(name="token", dtype=np.int32, shape=(1,))],
    "config": ModelConfig(batching=False),
}


class _Clock:
    """The runtime's clock in a test: time passes only as the generator's steps and the sends say, however loaded
    the machine (CI runs pytest runs side by side: a step of µs stretched past SLOW_STEP_S there)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0.0
        monkeypatch.setattr(time, "perf_counter", self)  # StreamWatch's and the instance's
        backend_shim.install()  # before the stream loops' module imports triton_python_backend_utils
        from repogen.runtime import decoupled

        monkeypatch.setattr(decoupled, "perf_counter", self)  # the plain generator's loop binds it at import

    def __call__(self) -> float:
        return self.now

    def take(self, ms: float) -> None:
        self.now += ms / 1000


def _paced(kind: str, take: Any) -> Repository:
    """Tokens, each taking ``ms`` of the generator's time (``take(ms)``)."""
    models = Repository()

    if kind == "function":

        @models.model("Paced", **_PACE)
        def paced(requests):
            for i in range(int(requests[0]["n"][0])):
                take(float(requests[0]["ms"][0]))
                yield [{"token": np.array([i], np.int32)}]

    else:

        @models.model("Paced", **_PACE)
        async def paced(requests):
            for i in range(int(requests[0]["n"][0])):
                take(float(requests[0]["ms"][0]))
                yield [{"token": np.array([i], np.int32)}]

    return models


def _sleep(ms: float) -> None:
    time.sleep(ms / 1000)


class _CountedRequest:
    """A request that counts how often it is asked, whose sends take ``send_ms`` (a busy server)."""

    def __init__(self, request: Any, send_ms: float, take: Any):
        self._request, self.asked, self._send_ms, self._take = request, 0, send_ms, take
        self.sent: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    def is_cancelled(self) -> bool:
        self.asked += 1
        return False

    def get_response_sender(self) -> Any:
        return self

    def send(self, response: Any = None, flags: int = 0) -> None:
        self._take(self._send_ms)
        self.sent.append((response, flags))


def _asked_at_steps(kind: str, n: int, ms: float, send_ms: float, take: Any = _sleep) -> int:
    """How often a stream of ``n`` steps of ``ms`` each, and sends of ``send_ms``, asks whether it is cancelled."""
    local = _paced(kind, take).local()
    spec = local._model_spec("Paced")
    instance, request = local._request(spec, {"n": np.array([n], np.int32), "ms": np.array([ms], np.float32)}, None)
    counted = _CountedRequest(request, send_ms, take)
    instance.last_execute = time.perf_counter()  # it did not wait: nothing is asked before the callable runs
    assert instance.execute([counted]) is None
    assert [int(r.output_tensors()[0].as_numpy()[0]) for r, _ in counted.sent[:-1]] == list(range(n))
    return counted.asked


@pytest.mark.parametrize("kind", ["function", "async function"])
def test_a_stream_is_asked_after_each_slow_step(kind):
    # on the real clock: a sleep never takes less than asked
    assert _asked_at_steps(kind, n=6, ms=2 * stream_cancellation.SLOW_STEP_S * 1000, send_ms=0) == 6


@pytest.mark.parametrize("kind", ["function", "async function"])
def test_time_spent_sending_never_makes_a_stream_ask(kind, monkeypatch):
    # 20 sends of 2 ms: 40 ms of waiting for the server, 8 times STREAM_POLL_S; the generator's steps take none
    clock = _Clock(monkeypatch)
    assert _asked_at_steps(kind, n=20, ms=0, send_ms=2, take=clock.take) == 0


@pytest.mark.parametrize("kind", ["function", "async function"])
def test_fast_steps_ask_once_their_work_adds_up(kind, monkeypatch):
    step_ms = stream_cancellation.SLOW_STEP_S * 1000 / 4
    steps = int(4 * stream_cancellation.STREAM_POLL_S / (step_ms / 1000))  # 4 x STREAM_POLL_S of work
    clock = _Clock(monkeypatch)
    asked = _asked_at_steps(kind, n=steps, ms=step_ms, send_ms=1, take=clock.take)  # sends add nothing to it
    assert asked == 4  # once every STREAM_POLL_S of work


def test_streams_served_at_once_are_asked_by_their_own_share_of_the_time(monkeypatch):
    """Eight async streams on one instance's event loop (runtime/concurrency.py), each step a quarter of
    SLOW_STEP_S of its own work, then ``await asyncio.sleep(0)``: a stream's step spans the other seven's too (twice
    SLOW_STEP_S), yet each is asked only once its own share adds up to STREAM_POLL_S, as one stream alone is; asked
    after every step, each token would pay a round trip to the server (bench/gpu.py's tokens at c=8)."""
    clock = _Clock(monkeypatch)  # installs the backend shim, which runtime.concurrency imports
    from repogen.runtime.concurrency import ConcurrentCalls

    streams, step_ms = 8, stream_cancellation.SLOW_STEP_S * 1000 / 4
    steps = int(4 * stream_cancellation.STREAM_POLL_S / (step_ms / 1000))  # 4 x STREAM_POLL_S of each one's work
    arrived: list[asyncio.Event] = []

    async def paced(requests):
        arrived.append(asyncio.Event())
        if len(arrived) == streams:
            for event in arrived:
                event.set()
        await arrived[-1].wait()  # every stream in flight before any step
        for i in range(steps):
            clock.take(step_ms)
            yield [{"token": np.array([i], np.int32)}]
            await asyncio.sleep(0)  # the other streams' turn

    models = Repository()
    models.model("Paced", **_PACE)(paced)
    local = models.local()
    spec = local._model_spec("Paced")
    inputs = {"n": np.array([steps], np.int32), "ms": np.array([step_ms], np.float32)}
    instance = local._instance(spec)
    counted = [_CountedRequest(local._request(spec, inputs, None)[1], 0, clock.take) for _ in range(streams)]
    calls = ConcurrentCalls(instance, 64, decoupled=True)
    try:
        for request in counted:
            calls.execute([request])
        deadline = time.monotonic() + 30
        while not all(r.sent and r.sent[-1][1] for r in counted) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        calls.close()
    for request in counted:
        assert [int(r.output_tensors()[0].as_numpy()[0]) for r, _ in request.sent[:-1]] == list(range(steps))
    # each about once every STREAM_POLL_S of its own work (its share of the last steps, as the others end, is a
    # guess), not after each of its 80 steps
    assert all(3 <= r.asked <= 4 for r in counted), [r.asked for r in counted]


@pytest.mark.parametrize("batched", [False, True], ids=["lean stream", "batched stream"])
def test_stream_cancelled_turns_true_for_the_thread_a_stream_handed_its_work(batched):
    """The flag a stream's body makes with stream_cancelled() is what its own thread reads: false while it is read,
    true once its reader left (before the generator's finally: runs); a flag made outside a stream stays false."""
    from repogen import stream_cancelled

    made: list[Any] = []
    seen_in_finally: list[bool] = []
    outside = stream_cancelled()
    models = Repository()
    io = {"inputs": [Tensor(name="n", dtype=np.int32, shape=(1,))],
          "outputs": [Tensor(name="token", dtype=np.int32, shape=(1,))]}  # fmt: skip

    def body(count):
        flag = stream_cancelled()
        made.append(flag)
        try:
            for i in range(count):
                time.sleep(0.005)
                assert not flag
                yield i
        finally:
            seen_in_finally.append(bool(flag))

    if batched:

        @models.model("T", config=ModelConfig(max_batch_size=4), **io)
        @batch
        def tokens(n):
            for i in body(int(n[0, 0])):
                yield {"token": np.full((len(n), 1), i, np.int32)}

        n = np.array([[50]], np.int32)
    else:

        @models.model("T", config=ModelConfig(batching=False), **io)
        def one(requests):
            for i in body(int(requests[0]["n"][0])):
                yield [{"token": np.array([i], np.int32)}]

        n = np.array([50], np.int32)
    local = models.local()
    whole = list(local.stream("T", {"n": n[..., :1] * 0 + 3}))
    assert len(whole) == 3 and made[-1].cancelled is False and seen_in_finally == [False]
    stream = local.stream("T", {"n": n})
    assert len(list(itertools.islice(stream, 2))) == 2
    stream.close()  # the reader leaves
    assert made[-1].cancelled is True and made[-1]("input_ids", "scores") is True
    assert seen_in_finally == [False, True]
    assert outside.cancelled is False
