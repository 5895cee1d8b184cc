"""What a BLS call carries beside its tensors (repogen/runtime/call_options.py, runtime/bls.py): what each option
sends, what is refused and why, a called model's error code on ``ModelCallError``, a timeout raised at the timeout; and
the same handle calls in process (``repository.local()``). The server proves them end to end
(tests/integration/test_bls_options_served.py)."""

from __future__ import annotations

import asyncio
import pickle
import sys
import threading
import types
from typing import Any

import numpy as np
import pytest

from repogen import (
    ModelCallError,
    ModelCallTimeout,
    ModelConfig,
    Repository,
    SequenceBatcher,
    Tensor,
    VersionPolicy,
)
from repogen.ir import lower
from repogen.runtime import bls
from repogen.runtime.call_options import SEQUENCE_END, SEQUENCE_START, CallOptions

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]


class _Error:
    """A ``pb_utils.TritonError`` as the stub hands a BLS response's error: a message and a code."""

    INTERNAL, UNAVAILABLE, CANCELLED = 1, 4, 7

    def __init__(self, message: str, code: int = 1):
        self._message, self._code = message, code

    def message(self) -> str:
        return self._message

    def code(self) -> int:
        return self._code


class _Response:
    def __init__(self, error: _Error | None = None, outputs: dict[str, np.ndarray] | None = None):
        self._error, self._outputs = error, outputs or {}

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> _Error | None:
        return self._error

    def output_tensors(self) -> list[Any]:
        return [types.SimpleNamespace(name=lambda n=n: n, as_numpy=lambda v=v: v, is_cpu=lambda: True)
                for n, v in self._outputs.items()]  # fmt: skip


class _Request:
    """A ``pb_utils.InferenceRequest``: records its keywords; ``exec`` answers ``answer`` once ``release`` is set."""

    made: list[dict[str, Any]] = []
    answer = _Response(outputs={"y": np.ones(1, np.float32)})
    release = threading.Event()

    def __init__(self, **keywords: Any):
        _Request.made.append(keywords)

    def exec(self, decoupled: bool = False) -> Any:
        _Request.release.wait(30)
        return _Request.answer

    def async_exec(self, decoupled: bool = False) -> Any:
        return asyncio.get_running_loop().run_in_executor(None, self.exec)


@pytest.fixture
def stub(monkeypatch):
    """``triton_python_backend_utils`` as a stub gives a BLS caller: the request and error classes."""
    module = types.SimpleNamespace(
        InferenceRequest=_Request, Tensor=lambda name, array: (name, array), TritonError=_Error
    )
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", module)
    _Request.made.clear()
    _Request.release.set()
    _Request.answer = _Response(outputs={"y": np.ones(1, np.float32)})
    yield module
    _Request.release.set()


def _client() -> bls.ModelClient:
    return bls.ModelClient("Callee", {"x": "TYPE_FP32"}, ("y",))


def test_each_option_becomes_the_request_s_keyword_and_a_default_sends_none(stub):
    _client()(x=np.zeros(1, np.float32))
    assert set(_Request.made[-1]) == {"request_id", "model_name", "inputs", "requested_output_names"}
    client = _client().version(2).parameters({"k": 1, "name": "a"}).parameters({"on": True}).timeout(0.25)
    client.sequence(42, start=True)(x=np.zeros(1, np.float32))
    sent = _Request.made[-1]
    assert (sent["model_version"], sent["parameters"], sent["timeout"]) == (
        2,
        {"k": 1, "name": "a", "on": True},
        250000,
    )
    assert (sent["correlation_id"], sent["flags"]) == (42, SEQUENCE_START)
    client.sequence("session-7", end=True)(x=np.zeros(1, np.float32))
    assert (_Request.made[-1]["correlation_id"], _Request.made[-1]["flags"]) == ("session-7", SEQUENCE_END)
    assert _client().options == CallOptions()  # each option made a copy: the handle itself is as it was


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (lambda c: c.parameters({"ratio": 0.5}), "parameter 'ratio' is float 0.5; .* bool, int or str .*as a str"),
        (lambda c: c.parameters({1: "a"}), "parameter names are str, found 1"),
        (lambda c: c.version(0), "a model version is a positive int"),
        (lambda c: c.timeout(0), "a timeout is a positive number of seconds, found 0"),
        (lambda c: c.sequence(0), r"an int correlation id is in 1..2\*\*64-1 \(0 means none\), found 0"),
        (lambda c: c.sequence(""), "a str correlation id is not empty"),
        (lambda c: c.sequence(1.5), "a correlation id is an int or a str, found float"),
    ],
)
def test_what_python_backend_would_refuse_is_refused_naming_it(option, message):
    with pytest.raises((TypeError, ValueError), match=message):
        option(_client())


def test_a_release_whose_request_lacks_a_keyword_says_which_release_has_it(stub):
    class Old(_Request):
        def __init__(self, parameters: Any = None, **keywords: Any):
            if parameters is not None:
                raise TypeError("__init__(): incompatible constructor arguments")
            super().__init__(**keywords)

    stub.InferenceRequest = Old
    with pytest.raises(ModelCallError.__mro__[1], match="request parameters need tritonserver 2.41 .NGC 23.12."):
        _client().parameters({"k": 1})(x=np.zeros(1, np.float32))


def test_a_called_model_s_error_keeps_its_code_through_a_reraise_and_pickling(stub):
    _Request.answer = _Response(_Error("Request timeout expired", _Error.UNAVAILABLE))
    with pytest.raises(ModelCallError) as raised:
        try:
            _client()(x=np.zeros(1, np.float32))
        except ModelCallError:
            raise  # as a callable that logs and re-raises
    assert (raised.value.code, raised.value.model) == ("UNAVAILABLE", "Callee")
    assert str(raised.value) == "model 'Callee' failed: Request timeout expired"
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (type(copy), str(copy), copy.code, copy.model) == (
        ModelCallError,
        str(raised.value),
        "UNAVAILABLE",
        "Callee",
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_call_outliving_its_timeout_raises_at_the_timeout_and_the_late_answer_is_dropped(stub, kind):
    _Request.release.clear()  # the called model never answers while the caller waits
    client = _client().timeout(0.05)
    with pytest.raises(ModelCallTimeout) as raised:
        if kind == "sync":
            client(x=np.zeros(1, np.float32))
        else:

            async def call():
                try:
                    await client.infer_async(x=np.zeros(1, np.float32))
                finally:  # the late answer comes, and is dropped: asyncio.run's executor need not wait for it
                    _Request.release.set()

            asyncio.run(call())
    assert isinstance(raised.value, TimeoutError) and raised.value.code == "UNAVAILABLE"
    assert str(raised.value) == "model 'Callee' did not answer within its 0.05 s timeout (handle.timeout); the call " \
        "was abandoned"  # fmt: skip
    _Request.release.set()


def test_the_handle_s_options_travel_into_the_built_client():
    repo = Repository()
    callee = repo.bind("Callee", lambda requests: [{"y": r["x"]} for r in requests], X, Y,
                       config=ModelConfig(batching=False))  # fmt: skip
    slow = callee.timeout(2).version(1)
    repo.bind("Caller", lambda requests: [slow(x=r["x"]) for r in requests], X, Y, config=ModelConfig(batching=False))
    (client,) = lower(repo).model("Caller").versions[0].clients
    assert client.options == CallOptions(version=1, timeout_s=2.0)


def test_in_process_a_handle_calls_a_sequence_a_version_and_hands_parameters_on():
    repo = Repository()

    class Counter:
        def __init__(self):
            self.sums = {}

        def __call__(self, requests):
            out = []
            for r in requests:
                cid = int(r["CORRID"].ravel()[0])
                self.sums[cid] = (0.0 if r["START"].ravel()[0] else self.sums[cid]) + float(r["x"].ravel()[0])
                out.append({"y": np.array([[self.sums[cid]]], np.float32)})
            return out

    counter = repo.bind("Counter", Counter, X, Y, config=ModelConfig(max_batch_size=4, batcher=SequenceBatcher()))
    policy = ModelConfig(batching=False, version_policy=VersionPolicy.all())
    repo.bind("V", lambda requests: [{"y": r["x"] + 1} for r in requests], X, Y, config=policy, model_version=1)
    versioned = repo.bind("V", lambda requests: [{"y": r["x"] + 2} for r in requests], X, Y, config=policy,
                          model_version=2)  # fmt: skip
    said = repo.bind("Said", lambda requests: [{"y": np.array([r.parameters["k"]], np.float32)} for r in requests],
                     X, Y, config=ModelConfig(batching=False))  # fmt: skip
    one = np.ones((1, 1), np.float32)
    totals = [float(counter.sequence(7, start=i == 0, end=i == 2)(x=one * (i + 1))["y"][0, 0]) for i in range(3)]
    assert totals == [1.0, 3.0, 6.0]
    x = np.zeros(1, np.float32)
    assert [float(versioned.version(v)(x=x)["y"][0]) for v in (1, 2)] == [1.0, 2.0]
    assert float(said.parameters({"k": 5})(x=x)["y"][0]) == 5.0


class _Stream:
    """A decoupled call's response iterator whose next response comes only once ``more`` is set; it fails if two
    threads read it at once (python_backend's is not made for that)."""

    def __init__(self):
        self.more, self.reading, self.read = threading.Event(), threading.Lock(), 0

    def __iter__(self):
        return self

    def __next__(self):
        if not self.reading.acquire(blocking=False):
            raise AssertionError("two threads read one response iterator at once")
        try:
            if self.read == 0:
                self.read += 1
                return _Response(outputs={"y": np.zeros(1, np.float32)})
            self.more.wait(30)
            raise StopIteration
        finally:
            self.reading.release()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_stream_outliving_its_timeout_is_let_go_once_its_pending_read_ends(stub, monkeypatch, kind):
    responses = _Stream()
    monkeypatch.setattr(_Request, "exec", lambda self, decoupled=False: responses)
    monkeypatch.setattr(_Request, "async_exec", lambda self, decoupled=False: asyncio.sleep(0, responses))
    finished = threading.Event()
    monkeypatch.setattr(bls, "_finish", lambda its, cancel=None: finished.set())
    client = bls.ModelClient("Callee", {"x": "TYPE_FP32"}, ("y",), decoupled=True).timeout(0.05)
    got = []

    async def read_async():
        async for step in client.stream_async(x=np.zeros(1, np.float32)):
            got.append(step)

    with pytest.raises(ModelCallTimeout):
        if kind == "sync":
            got.extend(client.stream(x=np.zeros(1, np.float32)))
        else:
            asyncio.run(read_async())
    assert len(got) == 1 and not finished.is_set()  # the pending read still holds the iterator
    responses.more.set()
    assert finished.wait(10)  # then it is let go, in the background
