"""runtime.streams and ModelClient.stream: a drained BLS iterator is released only behind a barrier."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from repogen.runtime import bls, cancellation, streams


class Iterator:
    """A stand-in ResponseIterator: yields the given responses once, like python_backend's."""

    def __init__(self, responses):
        self.left = list(responses)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.left:
            raise StopIteration
        return self.left.pop(0)


class Request:
    def __init__(self, cancelled=False):
        self.cancelled = cancelled
        self.asked = 0

    def is_cancelled(self):
        self.asked += 1
        return self.cancelled


@pytest.fixture(autouse=True)
def clean():
    streams._retired.clear()
    streams.executing(None)
    yield
    streams._retired.clear()
    streams.executing(None)


def _retire_one():
    it = Iterator([])
    ref = weakref.ref(it)
    streams.retire(it)
    del it
    gc.collect()
    return ref


def test_released_behind_the_barrier_of_a_request_in_flight():
    request = Request()
    streams.executing(request)
    ref = _retire_one()
    assert request.asked == 1 and ref() is None and streams.pending() == 0


@pytest.mark.parametrize("request_", [None, Request(cancelled=True)], ids=["none-in-flight", "cancelled"])
def test_kept_for_the_grace_period_without_a_barrier(request_, monkeypatch):
    streams.executing(request_)
    ref = _retire_one()
    assert ref() is not None and streams.pending() == 1
    clock = [streams.time.monotonic() + streams.GRACE_S + 1]
    monkeypatch.setattr(streams.time, "monotonic", lambda: clock[0])
    _retire_one()  # the next retirement lets go of what waited long enough
    gc.collect()
    assert ref() is None and streams.pending() == 1


class Tensor:
    def __init__(self, name, value):
        self._name, self._value = name, value

    def name(self):
        return self._name

    def is_cpu(self):
        return True

    def as_numpy(self):
        return self._value


class Response:
    def __init__(self, *tensors):
        self.tensors = list(tensors)

    def has_error(self):
        return False

    def output_tensors(self):
        return self.tensors


def _client(monkeypatch, responses):
    iterator = Iterator(responses)

    class Req:
        def exec(self, decoupled):
            assert decoupled
            return iterator

    client = bls.ModelClient("Spell", {"text": "TYPE_STRING"}, ("word",), decoupled=True)
    monkeypatch.setattr(client, "_request", lambda inputs, request_id="": Req())
    return client, iterator


def test_stream_retires_its_iterator_once_drained(monkeypatch):
    words = [Response(Tensor("word", np.array([w], dtype=object))) for w in (b"a", b"b")]
    client, iterator = _client(monkeypatch, [*words, Response()])  # the final response is empty
    streams.executing(Request())
    assert [c["word"].tolist() for c in client.stream(text=np.array([b"a b"], dtype=object))] == [[b"a"], [b"b"]]
    assert iterator.left == [] and streams.pending() == 0


def test_a_stream_left_early_is_drained_then_retired(monkeypatch):
    words = [Response(Tensor("word", np.array([w], dtype=object))) for w in (b"a", b"b", b"c")]
    client, iterator = _client(monkeypatch, [*words, Response()])
    stream = client.stream(text=np.array([b"a b c"], dtype=object))
    next(stream)
    stream.close()
    assert iterator.left == [] and streams.pending() == 1  # no request in flight: kept for the grace period


def test_a_stream_left_early_is_cancelled_by_token_then_the_token_removed(monkeypatch, tmp_path):
    """An iterator without cancel() (python_backend before r25.04): the callee sees the token while draining."""
    monkeypatch.setattr(cancellation.tempfile, "gettempdir", lambda: str(tmp_path))
    made = []
    client = bls.ModelClient("Spell", {"text": "TYPE_STRING"}, ("word",), decoupled=True)

    class Callee(Iterator):
        def __init__(self, request_id):
            super().__init__([Response(Tensor("word", np.array([b"a"], dtype=object)))] * 50)
            self.request_id = request_id
            self.sent = 0

        def __next__(self):
            if cancellation.is_cancelled(self):  # the callee's runtime asks at each step, then ends the stream
                self.left = []
            self.sent += 1
            return super().__next__()

    class Req:
        def __init__(self, request_id):
            self.request_id = request_id

        def exec(self, decoupled):
            made.append(Callee(self.request_id))
            return made[-1]

    monkeypatch.setattr(client, "_request", lambda inputs, request_id="": Req(lambda: request_id))
    stream = client.stream(text=np.array([b"a"], dtype=object))
    next(stream)
    stream.close()
    assert made[0].sent == 2 and list(tmp_path.iterdir()) == []  # the one read, then the end of the stream
