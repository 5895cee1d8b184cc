"""Async callables served concurrently (repogen/runtime/concurrency.py), in process on the backend shim: calls in
flight at once, the bound, cancellation and failures reaching their own requests, streams, the fallback of a release
without response senders for non-decoupled models; what the build records and warns.

The server proves the same end to end (tests/integration/test_concurrency_served.py). Nothing here reads a clock: calls
that must be in flight at once wait for each other, and fail after a patience no passing run comes near.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from repogen import (
    DynamicBatcher,
    InstanceGroup,
    ModelConfig,
    RateLimiter,
    Repository,
    SequenceBatcher,
    Tensor,
    batch,
    build_repository,
    factory,
)
from repogen.errors import BuildError
from repogen.local import backend_shim
from repogen.runtime.contract import DEFAULT_MAX_CONCURRENCY
from repogen.runtime.instance import is_async

pb = backend_shim.install()

from repogen.runtime.concurrency import ConcurrentCalls  # noqa: E402  (after the shim it imports)

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]
ONE = ModelConfig(batching=False)
PATIENCE_S = 20.0
HERE = Path(__file__).resolve().parent


async def _coroutine(requests):
    return [{"y": r["x"]} for r in requests]


async def _agen(requests):
    yield [{"y": r["x"]} for r in requests]


class _AsyncClass:
    async def __call__(self, requests):
        return []


class _SyncClass:
    def __call__(self, requests):
        return []


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (_coroutine, True),
        (_agen, True),
        (_AsyncClass, True),
        (_AsyncClass(), True),
        (batch(_coroutine), True),
        (functools.partial(_coroutine), True),
        (_AsyncClass().__call__, True),
        (lambda requests: [], False),
        (_SyncClass, False),
        (_SyncClass(), False),
        (batch(lambda x: {"y": x}), False),
        (factory(lambda context: _coroutine), False),  # known in the server only
    ],
)
def test_what_is_async(target, expected):
    assert is_async(target) is expected


class _Meeting:
    """Calls that each wait until ``n`` of them are in flight (or fail after PATIENCE_S)."""

    def __init__(self, n):
        self.n, self.waiting, self.in_flight, self.peak = n, [], 0, 0
        self.cancelled = 0

    async def __call__(self, requests):
        (request,) = requests
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        if len(self.waiting) >= self.n:
            for waiter in self.waiting:
                waiter.done() or waiter.set_result(None)
            self.waiting = []
        try:
            await asyncio.wait_for(future, PATIENCE_S)
            if request["x"][0] < 0:
                raise ValueError("negative")
            return [{"y": request["x"] * 2}]
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.in_flight -= 1


def _instance(callable_, config=ONE, decoupled=False):
    repo = Repository()
    repo.bind("M", callable_, inputs=X, outputs=Y, config=config)
    local = repo.local()
    return local._instance(local.spec.model("M"))


def _request(x):
    return pb.InferenceRequest([pb.Tensor("x", np.array([x], np.float32))])


def _answers(request):
    """Every (response, flags) the request's sender got, up to its FINAL."""
    found = []
    while not found or not found[-1][1] & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
        found.append(request.sender.queue.get(timeout=PATIENCE_S + 10))
    return found


def _value(response):
    if response.has_error():
        return response.error().message()
    return float(response.output_tensors()[0].as_numpy().reshape(-1)[0])


def test_calls_are_in_flight_at_once_and_each_answer_is_its_own_request_s():
    meeting = _Meeting(8)
    model = _instance(lambda requests: meeting(requests))
    calls = ConcurrentCalls(model, 64, decoupled=False)
    try:
        requests = [_request(i) for i in range(8)]
        for request in requests:
            assert calls.execute([request]) is None  # answered through its sender, later
        answers = [_answers(request) for request in requests]
    finally:
        calls.close()
    assert [[(_value(r), flags) for r, flags in a] for a in answers] == [[(2.0 * i, 1)] for i in range(8)]
    assert meeting.peak == 8


def test_beyond_the_bound_execute_waits_for_room():
    meeting = _Meeting(2)  # pairs meet; with a bound of 2, no third call is ever in flight
    model = _instance(lambda requests: meeting(requests))
    calls = ConcurrentCalls(model, 2, decoupled=False)
    try:
        requests = [_request(i) for i in range(6)]
        for request in requests:
            calls.execute([request])
        answers = [_answers(request) for request in requests]
    finally:
        calls.close()
    assert [_value(a[0][0]) for a in answers] == [2.0 * i for i in range(6)]
    assert meeting.peak == 2


def test_the_request_a_client_sends_on_reading_its_answer_finds_room():
    """At the bound, the next request reaches ``execute`` while the loop thread is still in the send that let its
    client send it (on two busy cores that thread then waits for the GIL): it must not wait for that send to end."""
    model = _instance(lambda requests: _echo(requests))
    calls = ConcurrentCalls(model, 1, decoupled=False)
    first, second = _request(1), _request(2)
    sent, admitted = first.sender.send, []

    def send(response=None, flags=0):  # the client reads the answer and sends its next request at once
        arrival = threading.Thread(target=calls.execute, args=([second],), daemon=True)
        arrival.start()
        arrival.join(timeout=2.0)
        admitted.append(not arrival.is_alive())  # execute returned while this send was still going on
        sent(response, flags)

    first.sender.send = send
    try:
        calls.execute([first])
        answers = [_value(_answers(request)[0][0]) for request in (first, second)]
    finally:
        calls.close()
    assert answers == [2.0, 4.0]
    assert admitted == [True]


async def _echo(requests):
    await asyncio.sleep(0)
    return [{"y": request["x"] * 2} for request in requests]


def test_a_failure_is_its_own_request_s_answer():
    meeting = _Meeting(4)
    model = _instance(lambda requests: meeting(requests))
    calls = ConcurrentCalls(model, 8, decoupled=False)
    try:
        requests = [_request(x) for x in (1, -1, 2, -2)]
        for request in requests:
            calls.execute([request])
        answers = [_value(_answers(request)[0][0]) for request in requests]
    finally:
        calls.close()
    assert answers[0] == 2.0 and answers[2] == 4.0
    assert answers[1].startswith("ValueError: negative") and answers[3].startswith("ValueError: negative")


def test_a_cancelled_call_is_stopped_at_its_await_and_answered_as_cancelled_alone():
    meeting = _Meeting(3)  # never met: only two calls come
    model = _instance(lambda requests: meeting(requests))
    calls = ConcurrentCalls(model, 8, decoupled=False)
    try:
        doomed, kept = _request(1), _request(2)
        calls.execute([doomed])
        calls.execute([kept])
        doomed.cancelled = True  # its client left: the next poll cancels its task
        cancelled = _answers(doomed)
        third = _request(3)
        calls.execute([third])  # the kept call meets this one
        answers = [_answers(kept), _answers(third)]
    finally:
        calls.close()
    assert "cancelled" in _value(cancelled[0][0])
    assert [_value(a[0][0]) for a in answers] == [4.0, 6.0]
    assert meeting.cancelled == 1


class _Counted(pb.InferenceRequest):
    """A request that counts how often it is asked whether it was cancelled (a round trip to the server each)."""

    asked = 0

    def is_cancelled(self):
        type(self).asked += 1
        return super().is_cancelled()


def _counted(x, cancelled=False, batched=False):
    request = _Counted([pb.Tensor("x", np.array([[x]] if batched else [x], np.float32))])
    request.cancelled = cancelled
    return request


def test_an_idle_instance_s_requests_are_not_asked_whether_they_were_cancelled(monkeypatch):
    monkeypatch.setattr(_Counted, "asked", 0)
    model = _instance(_coroutine)
    calls = ConcurrentCalls(model, 8, decoupled=False)
    try:
        for x in range(3):  # one at a time, each answered before the next comes: none waited in a queue
            request = _counted(x)
            calls.execute([request])
            assert _value(_answers(request)[0][0]) == x
    finally:
        calls.close()
    assert _Counted.asked == 0


async def _same(x):
    return {"y": x}


@pytest.mark.parametrize(
    ("callable_", "config", "batched"),
    [
        (_coroutine, ModelConfig(batching=False, instance_groups=[InstanceGroup(rate_limiter=RateLimiter({"R": 1}))]),
         False),
        (batch(_same), ModelConfig(batcher=DynamicBatcher(max_queue_delay_microseconds=20_000)), True),
    ],
    ids=["rate limiter", "batcher delay"],
)  # fmt: skip
def test_requests_a_queue_may_hold_while_the_instance_idles_are_asked(callable_, config, batched):
    model = _instance(callable_, config=config)
    calls = ConcurrentCalls(model, 8, decoupled=False)
    try:
        gone, kept = _counted(1, cancelled=True, batched=batched), _counted(2, batched=batched)
        calls.execute([gone])
        calls.execute([kept])
        answers = _answers(gone), _answers(kept)
    finally:
        calls.close()
    assert "cancelled" in _value(answers[0][0][0]) and _value(answers[1][0][0]) == 2.0


def test_requests_queued_behind_an_execute_that_waited_for_room_are_asked():
    release = threading.Event()

    async def held(requests):
        await asyncio.get_running_loop().run_in_executor(None, release.wait, PATIENCE_S)
        return [{"y": r["x"]} for r in requests]

    model = _instance(held)
    calls = ConcurrentCalls(model, 1, decoupled=False)
    try:
        first, second = _counted(1), _counted(2)
        calls.execute([first])
        waiting = threading.Thread(target=calls.execute, args=([second],))
        waiting.start()  # no room: it waits in execute, and the server's queue fills behind it
        time.sleep(0.05)
        release.set()
        waiting.join(PATIENCE_S)
        third = _counted(3, cancelled=True)  # its client left while it queued behind the wait
        _answers(first)
        calls.execute([third])
        answers = _answers(second), _answers(third)
    finally:
        calls.close()
    assert _value(answers[0][0][0]) == 2.0 and "cancelled" in _value(answers[1][0][0])


def test_an_async_generator_streams_its_steps_concurrently_then_final():
    class Stream:
        def __init__(self):
            self.meeting = _Meeting(4)

        async def __call__(self, requests):
            await self.meeting(requests)  # all four in flight before any step
            for i in range(3):
                yield [{"y": requests[0]["x"] + i}]

    model = _instance(Stream, config=ONE)
    calls = ConcurrentCalls(model, 8, decoupled=True)
    try:
        requests = [_request(10 * i) for i in range(4)]
        for request in requests:
            calls.execute([request])
        answers = [_answers(request) for request in requests]
    finally:
        calls.close()
    for i, answer in enumerate(answers):
        assert [(_value(r) if r else None, flags) for r, flags in answer] == [
            (10.0 * i, 0), (10.0 * i + 1, 0), (10.0 * i + 2, 0), (None, 1)
        ]  # fmt: skip


def test_a_release_without_senders_for_non_decoupled_requests_serves_one_call_at_a_time():
    class Old(pb.InferenceRequest):
        def get_response_sender(self):
            raise RuntimeError("'get_response_sender' function must be called only when the model is using the "
                               "decoupled transaction policy.")  # fmt: skip

    model = _instance(lambda requests: _coroutine(requests))
    calls = ConcurrentCalls(model, 8, decoupled=False)
    model.execute = calls.execute
    old = Old([pb.Tensor("x", np.array([3], np.float32))])
    (response,) = model.execute([old])  # answered through execute's return, as before
    assert _value(response) == 3.0
    assert "execute" not in model.__dict__  # the class's own execute from now on


def _built(tmp_path, callable_, config, **options):
    repo = Repository()
    repo.bind("M", callable_, inputs=X, outputs=Y, config=config)
    out = tmp_path / "repo"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_repository(repo, out, roots=(str(HERE),), **options)
    return json.loads((out / "M" / "1" / "model.json").read_text()), [str(w.message) for w in caught]


def test_the_build_records_the_bound_and_warns_once_of_older_releases(tmp_path):
    meta, said = _built(tmp_path, _coroutine, ONE)
    assert meta["max_concurrency"] == DEFAULT_MAX_CONCURRENCY
    assert [m for m in said if "one request at a time" in m] == [
        "async callables serve one request at a time per instance on these targeted releases: 'M' (NGC 23.10-24.05); "
        "python_backend lets a request be answered after execute returns from NGC 24.06 (24.04 for a streaming "
        "model), where up to max_concurrency of them are in flight at once. Add instances "
        "(ModelConfig(instance_groups=...)) to serve more at once there"
    ]
    meta, said = _built(tmp_path, _coroutine, ModelConfig(batching=False, max_concurrency=3), triton_release="24.10")
    assert meta["max_concurrency"] == 3 and not [m for m in said if "one request at a time" in m]
    meta, _ = _built(tmp_path, lambda requests: [], ONE)
    assert "max_concurrency" not in meta


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8"])
def test_max_concurrency_is_a_positive_int(tmp_path, value):
    with pytest.raises(BuildError, match=f"max_concurrency must be a positive int .*found {value!r}"):
        _built(tmp_path, _coroutine, ModelConfig(batching=False, max_concurrency=value))


def test_max_concurrency_on_a_callable_that_is_not_async_names_the_fix(tmp_path):
    with pytest.raises(BuildError, match="no callable bound to it is async .*make the callable async, or remove"):
        _built(tmp_path, lambda requests: [], ModelConfig(batching=False, max_concurrency=8))


def test_a_sequence_model_s_async_callable_serves_one_call_at_a_time(tmp_path):
    """Triton hands a sequence's next request over once the one before left execute: in order only one at a time."""
    meta, said = _built(tmp_path, _coroutine, ModelConfig(max_batch_size=4, batcher=SequenceBatcher()))
    assert meta["max_concurrency"] == 0 and not [m for m in said if "one request at a time" in m]
    with pytest.raises(BuildError, match="max_concurrency=8 on a SequenceBatcher model: .* out of order"):
        _built(tmp_path, _coroutine, ModelConfig(max_batch_size=4, batcher=SequenceBatcher(), max_concurrency=8))


def test_a_release_before_python_backend_r24_04_serves_one_call_at_a_time_and_says_why(monkeypatch):
    import types

    from repogen.runtime import concurrency

    monkeypatch.setitem(sys.modules, "c_python_backend_utils", types.SimpleNamespace())  # r23.x: no async marker
    assert concurrency.release_problem(decoupled=False) == (
        "its async callable serves one request at a time on this release (python_backend before r24.06); NGC 24.06 "
        "and later serve it concurrently"
    )
    said = []
    assert concurrency.start(_instance(_coroutine), 8, False, lambda level, line: said.append((level, line))) is None
    assert said == [("log_warn", f"model 'M': {concurrency.release_problem(False)}")]
    monkeypatch.setitem(
        sys.modules, "c_python_backend_utils", types.SimpleNamespace(async_event_future_done_callback=print)
    )
    assert concurrency.release_problem(decoupled=True) is None
