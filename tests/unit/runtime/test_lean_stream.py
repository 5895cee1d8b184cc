"""The usual stream's own way (``decoupled.serve_one``: one request that has not waited) answers exactly as the
general ``execute`` does, whatever the callable does: every response, every error, FINAL once, and the
generator closed. Each case runs both ways on one ``TritonPythonModel`` and the two records are compared."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from repogen import ModelConfig, Repository, Tensor
from repogen.local import backend_shim

backend_shim.install()  # before the runtime, which imports triton_python_backend_utils
from repogen.runtime import decoupled  # noqa: E402

_IO = {
    "inputs": [Tensor(name="n", dtype=np.int32, shape=(1,))],
    "outputs": [Tensor(name="token", dtype=np.int32, shape=(-1,))],
    "config": ModelConfig(batching=False, decoupled=True),  # stated: most callables here return their generator
}
CLOSED: dict[str, int] = {}


def _tokens(name: str, n: int, fail_at: int | None = None, step: Any = None):
    try:
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"token {i} failed")
            yield step if step is not None and i == 1 else [{"token": np.array([i], np.int32)}]
    finally:
        CLOSED[name] = CLOSED.get(name, 0) + 1


def _repository() -> Repository:
    models = Repository()

    @models.model("Plain", **_IO)
    def plain(requests):
        return _tokens("Plain", int(requests[0]["n"][0]))

    @models.model("FailsMidway", **_IO)
    def fails_midway(requests):
        return _tokens("FailsMidway", 5, fail_at=2)

    @models.model("FailsAtOnce", **_IO)
    def fails_at_once(requests):
        raise RuntimeError("no stream today")

    @models.model("OneAnswer", **_IO)
    def one_answer(requests):
        return [{"token": np.array([7, 8], np.int32)}]

    @models.model("Async", **_IO)
    async def async_tokens(requests):
        try:
            for i in range(3):
                yield [{"token": np.array([i], np.int32)}]
        finally:
            CLOSED["Async"] = CLOSED.get("Async", 0) + 1

    @models.model("WrongShape", **_IO)
    def wrong_shape(requests):
        return _tokens("WrongShape", 4, step={"token": np.array([1], np.int32)})  # a dict, not a list of one

    @models.model("Converted", **_IO)
    def converted(requests):
        return _tokens("Converted", 3, step=[{"token": [5, 6]}])  # a list: model.response converts it

    return models


class _Recorded:
    """The server's request and its sender in one: records each send; cancelled once ``cancel_after`` went out."""

    def __init__(self, request: Any, cancel_after: int | None):
        self._request, self._cancel_after = request, cancel_after
        self.sent: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    def is_cancelled(self) -> bool:
        return self._cancel_after is not None and len(self.sent) >= self._cancel_after

    def get_response_sender(self) -> Any:
        return self

    def send(self, response: Any = None, flags: int = 0) -> None:
        if response is None:
            self.sent.append((None, flags))
        elif response.has_error():
            self.sent.append(("error", response.error().message(), flags))
        else:
            self.sent.append(({t.name(): t.as_numpy().tolist() for t in response.output_tensors()}, flags))


def _serve(local: Any, model: str, lean: bool, cancel_after: int | None, monkeypatch: Any) -> tuple[Any, ...]:
    spec = local._model_spec(model)
    instance, request = local._request(spec, {"n": np.array([4], np.int32)}, None)
    recorded = _Recorded(request, cancel_after)
    taken: list[Any] = []
    serve_one = decoupled.serve_one
    monkeypatch.setattr(decoupled, "serve_one", lambda *args: taken.append(args) or serve_one(*args))
    # a request that may have waited is asked before its callable runs, and takes the general way
    instance.last_execute = time.perf_counter() if lean else -1.0
    before = dict(CLOSED)
    assert instance.execute([recorded]) is None
    assert bool(taken) is lean
    closed = CLOSED.get(model, 0) - before.get(model, 0)
    return recorded.sent, closed


CASES = ["Plain", "FailsMidway", "FailsAtOnce", "OneAnswer", "Async", "WrongShape", "Converted"]


@pytest.mark.parametrize("model", CASES)
def test_the_lean_way_answers_as_the_general_one(model, monkeypatch):
    local = _repository().local()
    lean = _serve(local, model, True, None, monkeypatch)
    general = _serve(local, model, False, None, monkeypatch)
    assert lean == general
    sent, closed = lean
    finals = [s for s in sent if s[-1] & backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL]
    assert finals == [sent[-1]], "FINAL exactly once, last"
    assert closed == (0 if model in ("FailsAtOnce", "OneAnswer") else 1), "the generator is closed"


def test_the_lean_way_answers_as_expected():
    """What both ways send, spelled out for the cases where a mistake would be easy to miss."""
    local = _repository().local()
    final = backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL
    with pytest.MonkeyPatch.context() as patch:
        assert _serve(local, "Plain", True, None, patch)[0] == [*(({"token": [i]}, 0) for i in range(4)), (None, final)]
    with pytest.MonkeyPatch.context() as patch:
        sent = _serve(local, "FailsMidway", True, None, patch)[0]
    assert sent[:2] == [({"token": [0]}, 0), ({"token": [1]}, 0)]
    assert sent[2] == ("error", "ValueError: token 2 failed", final) and len(sent) == 3
    with pytest.MonkeyPatch.context() as patch:
        sent = _serve(local, "WrongShape", True, None, patch)[0]
    assert sent[0] == ({"token": [0]}, 0) and sent[1][0] == "error" and "returned a dict" in sent[1][1]


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "general"])
def test_a_stream_cancelled_midway_ends_with_final_alone(lean, monkeypatch):
    """Cancelled after two tokens: asked after a slow step, the generator is closed there and nothing more goes."""
    models = Repository()
    slow_closed: list[int] = []

    @models.model("Slow", **_IO)
    def slow(requests):
        try:
            for i in range(50):
                time.sleep(0.002)  # a slow step: asked after each
                yield [{"token": np.array([i], np.int32)}]
        finally:
            slow_closed.append(1)

    sent, _ = _serve(models.local(), "Slow", lean, 2, monkeypatch)
    final = backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL
    assert sent == [({"token": [0]}, 0), ({"token": [1]}, 0), (None, final)]
    assert slow_closed == [1]


def test_a_failure_after_the_cancellation_is_nobodys_answer(monkeypatch):
    """A stream whose callable fails once its request was cancelled ends with FINAL alone, as the general way's."""
    models = Repository()

    @models.model("Late", **_IO)
    def late(requests):
        yield [{"token": np.array([0], np.int32)}]
        raise RuntimeError("too late")

    final = backend_shim.TRITONSERVER_RESPONSE_COMPLETE_FINAL
    assert _serve(models.local(), "Late", True, 1, monkeypatch)[0] == [({"token": [0]}, 0), (None, final)]


def test_the_lean_ways_request_is_what_request_init_makes(monkeypatch):
    """serve_one fills a Request's fields itself (no __init__ frame): every slot as ``Request(source=...)`` sets it."""
    from repogen.runtime.request import Request

    seen: list[Any] = []
    models = Repository()

    @models.model("Seen", **_IO)
    def seen_requests(requests):
        seen.append(requests[0])
        yield [{"token": np.array([0], np.int32)}]

    local = models.local()
    _serve(local, "Seen", True, None, monkeypatch)
    (made,) = seen
    source = made._source
    expected = Request(source=source)
    assert type(made) is Request and dict(made) == {"n": [4]}
    assert {slot: getattr(made, slot) for slot in Request.__slots__} == {
        slot: getattr(expected, slot) for slot in Request.__slots__
    }
    assert made.parameters == {} and made.is_cancelled() is False
