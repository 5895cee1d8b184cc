"""BLS: a model handle, once pickled into a served callable, becomes this client.

Calling it sends a ``pb_utils.InferenceRequest`` to another model of the same server and returns
its outputs as the calling model takes tensors: numpy arrays, or its framework's tensors (a model that
declared ``tensors="torch"``) where the called model made them, a GPU's without a copy. Inputs may be
numpy arrays or any framework's tensors; a GPU tensor is sent as one. A numpy caller asks Triton for its
outputs in host memory when the called model may make them on a GPU (the build says which), so that it
needs no framework to read them; ``handle.preferred_memory("gpu")`` asks for the caller's GPU instead.

A call carries what a request can (runtime/call_options.py): ``handle.version(2)``, ``handle.parameters({...})``,
``handle.timeout(seconds)`` and ``handle.sequence(correlation_id, start=..., end=...)`` each return the same client
with that set, for ``infer``, ``infer_async``, ``stream`` and ``stream_async`` alike. A called model's error is raised
as ``ModelCallError`` with its code; a call that outlives its timeout raises ``ModelCallTimeout`` at the timeout,
whatever the called model does meanwhile (Triton itself bounds only a request's wait in a queue).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from time import monotonic
from typing import Any

import numpy as np

from . import streams
from .call_errors import ModelCallError, ModelCallTimeout, answered_code
from .call_options import CallOptions
from .context import find_context
from .contract import BY_ENUM, NUMPY, NUMPY_DTYPES, STRING
from .conversion import to_bytes_array
from .errors import InferenceError
from .frameworks import Framework, framework_named, framework_of, host_copy, on_cpu
from .stream_cancellation import cancel_stream, forget_stream, stream_token
from .tensors import backend_tensor
from .tracing import request_trace


def _backend() -> Any:
    import triton_python_backend_utils as pb_utils  # exists only inside the server

    return pb_utils


_timed: ThreadPoolExecutor | None = None  # where a blocking call with a timeout waits, while its caller does not
_timed_lock = threading.Lock()


def _timed_calls() -> ThreadPoolExecutor:
    global _timed
    with _timed_lock:
        if _timed is None:
            _timed = ThreadPoolExecutor(64, thread_name_prefix="repogen-bls-timeout")
        return _timed


class ModelClient:
    """Calls one model of the server from inside another model's callable."""

    def __init__(
        self,
        model: str,
        inputs: dict[str, str],
        outputs: tuple[str, ...],
        decoupled: bool = False,
        requested: tuple[str, ...] | None = None,
        memory: str | None = None,
        tensors: str = NUMPY,
        options: CallOptions | None = None,
    ):
        self.model = model
        self.input_types = inputs  # input name -> Triton data type, for casting what callers pass
        self.output_names = outputs
        self.decoupled = decoupled
        self.requested = requested
        self.memory = memory  # "cpu" or "gpu": Triton's preferred memory for the outputs; None: where made
        self.tensors = tensors  # what the calling model takes: numpy, or a framework's tensors
        self.options = options or CallOptions()  # version, parameters, timeout, sequence (runtime/call_options.py)
        self._framework: Framework | None = None
        if decoupled:
            streams.consumer()

    @property
    def name(self) -> str:
        return self.model

    def outputs(self, *names: str) -> ModelClient:
        """The same model, asking for these outputs only."""
        unknown = sorted(set(names) - set(self.output_names))
        if unknown:
            raise InferenceError(f"model '{self.model}' has no output(s) {unknown}; it has {list(self.output_names)}")
        return self._with(requested=tuple(names))

    def preferred_memory(self, memory: str) -> ModelClient:
        """The same model, asking Triton for its outputs in ``"cpu"`` or ``"gpu"`` memory (the caller's GPU)."""
        return self._with(memory=memory)

    def version(self, version: int) -> ModelClient:
        """The same model, calling version ``version`` of it (else the one Triton's version policy serves latest)."""
        return self._with(options=self.options.with_version(version))

    def parameters(self, parameters: Mapping[str, Any]) -> ModelClient:
        """The same model, with these request parameters (bool, int or str values), e.g. the caller's own request's:
        ``handle.parameters(request.parameters)``. Needs tritonserver 2.41 (NGC 23.12) or newer."""
        return self._with(options=self.options.with_parameters(parameters))

    def timeout(self, seconds: float) -> ModelClient:
        """The same model, answering within ``seconds`` or raising ``ModelCallTimeout`` then (a stream: ending)."""
        return self._with(options=self.options.with_timeout(seconds))

    def sequence(self, correlation_id: int | str, start: bool = False, end: bool = False) -> ModelClient:
        """The same model, called as a request of sequence ``correlation_id`` (a sequence batcher's model): ``start``
        on its first request, ``end`` on its last. A str id needs tritonserver 2.51 (NGC 24.10) or newer."""
        return self._with(options=self.options.with_sequence(correlation_id, start, end))

    def _with(self, **changes: Any) -> ModelClient:
        fields = {
            "requested": self.requested, "memory": self.memory, "tensors": self.tensors, "options": self.options
        }  # fmt: skip
        fields.update(changes)
        client = ModelClient.__new__(ModelClient)  # not __init__: a copy is not another consumer of streams
        client.__dict__.update(self.__dict__)
        client._framework = None
        for name, value in fields.items():
            setattr(client, name, value)
        return client

    def __call__(self, **inputs: Any) -> dict[str, Any]:
        return self.infer(**inputs)

    def infer(self, **inputs: Any) -> dict[str, Any]:
        if self.decoupled:
            raise InferenceError(f"model '{self.model}' is decoupled (streaming); iterate handle.stream(...) instead")
        request = self._request(inputs)
        timeout = self.options.timeout_s
        if timeout is None:
            return self._outputs(request.exec())
        answer = _timed_calls().submit(request.exec)  # the call waits in a thread of its own, its caller at most this
        try:
            return self._outputs(answer.result(timeout=timeout))
        except FutureTimeout:
            raise self._timed_out() from None

    async def infer_async(self, **inputs: Any) -> dict[str, Any]:
        """Awaitable call: several can run concurrently inside an ``async def`` callable."""
        if self.decoupled:
            raise InferenceError(f"model '{self.model}' is decoupled (streaming); use handle.stream_async(...)")
        answer = self._request(inputs).async_exec()
        timeout = self.options.timeout_s
        if timeout is None:
            return self._outputs(await answer)
        try:
            return self._outputs(await asyncio.wait_for(answer, timeout))
        except asyncio.TimeoutError:
            raise self._timed_out() from None

    def _timed_out(self) -> ModelCallTimeout:
        return ModelCallTimeout(
            f"model '{self.model}' did not answer within its {self.options.timeout_s:g} s timeout "
            "(handle.timeout); the call was abandoned",
            model=self.model,
        )

    def stream(self, **inputs: Any) -> Iterator[dict[str, Any]]:
        """Each response of a decoupled model as it arrives; the empty final response is skipped.

        A caller that stops early (its own request cancelled, or it broke out of the loop) cancels the
        stream (runtime/stream_cancellation.py says how on each release). The response iterator is then drained to
        its end and retired (``streams.retire``), never simply dropped: the stub's own thread could then free
        its responses without the GIL, which kills the stub on Python 3.12 (:mod:`repogen.runtime.streams`).
        With a timeout, a stream that has not ended by then is cancelled, drained in the background, and
        ``ModelCallTimeout`` raised.
        """
        token = stream_token()
        responses = self._request(inputs, token).exec(decoupled=True)
        deadline = None if self.options.timeout_s is None else monotonic() + self.options.timeout_s
        done, pending = False, None
        try:
            while True:
                if deadline is None:
                    response = _next(responses)
                else:
                    pending = _timed_calls().submit(_next, responses)
                    try:
                        response = pending.result(timeout=max(0.0, deadline - monotonic()))
                    except FutureTimeout:
                        raise self._timed_out() from None
                    pending = None
                if response is _END:
                    break
                outputs = self._outputs(response)
                if outputs:
                    yield outputs
            done = True
        finally:
            _let_go(responses, None if done else token, pending)

    async def stream_async(self, **inputs: Any) -> AsyncIterator[dict[str, Any]]:
        """``stream`` for an ``async def`` callable: each response is awaited, so other calls run meanwhile."""
        token = stream_token()
        responses = await self._request(inputs, token).async_exec(decoupled=True)
        loop = asyncio.get_running_loop()
        deadline = None if self.options.timeout_s is None else monotonic() + self.options.timeout_s
        done, pending = False, None
        try:
            while True:  # each response waited for in a thread: the event loop serves other calls meanwhile
                if deadline is None:
                    response = await loop.run_in_executor(None, _next, responses)
                else:
                    pending = _timed_calls().submit(_next, responses)
                    try:
                        response = await asyncio.wait_for(asyncio.wrap_future(pending), deadline - monotonic())
                    except asyncio.TimeoutError:
                        raise self._timed_out() from None
                    pending = None
                if response is _END:
                    break
                outputs = self._outputs(response)
                if outputs:
                    yield outputs
            done = True
        finally:
            _let_go(responses, None if done else token, pending)

    def _request(self, inputs: dict[str, Any], request_id: str = "") -> Any:
        pb_utils = _backend()
        unknown = sorted(set(inputs) - set(self.input_types))
        if unknown:
            raise InferenceError(
                f"model '{self.model}' has no input(s) {unknown}; its inputs are {sorted(self.input_types)}"
            )
        tensors = [self._tensor(pb_utils, name, value) for name, value in inputs.items()]
        on_gpu = [(i, t) for i, t in enumerate(tensors) if type(t) is _OnGpu]  # sent after one wait, together
        for device in sorted({t.framework.address(t.value)[0] for _, t in on_gpu}):
            on_gpu[0][1].framework.synchronize(device)
        for i, t in on_gpu:
            tensors[i] = pb_utils.Tensor.from_dlpack(t.name, t.framework.capsule(t.value))
        options = {}
        if self.memory is not None:
            context = find_context()
            kind = pb_utils.TRITONSERVER_MEMORY_GPU if self.memory == "gpu" else pb_utils.TRITONSERVER_MEMORY_CPU
            options["preferred_memory"] = pb_utils.PreferredMemory(kind, context.device_id if context else 0)
        trace = request_trace()  # the caller's: the called model's spans join its trace
        if trace is not None:
            options["trace"] = trace
        options.update(self.options.request_keywords())
        try:
            return pb_utils.InferenceRequest(
                request_id=request_id,
                model_name=self.model,
                inputs=tensors,
                requested_output_names=list(self.requested or self.output_names),
                **options,
            )
        except TypeError as exc:  # a keyword this release's InferenceRequest does not take
            raise InferenceError(
                f"model '{self.model}' cannot be called with {self.options!r} on this tritonserver: its Python backend "
                f"refused the request ({exc}); request parameters need tritonserver 2.41 (NGC 23.12), a str "
                "correlation id 2.51 (NGC 24.10)"
            ) from None

    def _tensor(self, pb_utils: Any, name: str, value: Any) -> Any:
        data_type = self.input_types[name]
        framework = framework_of(value) if type(value) is not np.ndarray else None
        if framework is not None and data_type != STRING:  # e.g. a torch tensor: sent from its device
            element = BY_ENUM[data_type].element
            if framework.element(value) not in (element, ""):
                value = framework.cast(value, element)
            value = framework.contiguous(value)
            if framework.batch_transfers and not on_cpu(value) and framework.element(value) != "bfloat16":
                return _OnGpu(name, value, framework)  # the call's GPU inputs wait once, together (_request)
            return backend_tensor(pb_utils, name, value)
        if framework is not None:
            value = framework.host(value)
        array = np.asarray(value)
        if data_type == "TYPE_STRING":
            array = to_bytes_array(array)
        elif array.dtype != NUMPY_DTYPES[data_type]:
            array = array.astype(NUMPY_DTYPES[data_type])
        return pb_utils.Tensor(name, np.ascontiguousarray(array))

    def _outputs(self, response: Any) -> dict[str, Any]:
        if response.has_error():
            error = response.error()
            code = answered_code(_backend(), error)
            raise ModelCallError(f"model '{self.model}' failed: {error.message()}", code=code, model=self.model)
        if self.tensors == NUMPY:
            return {t.name(): (t.as_numpy() if t.is_cpu() else self._on_gpu(t)) for t in response.output_tensors()}
        if self._framework is None:
            self._framework = framework_named(self.tensors)
        framework = self._framework
        outputs = {}
        for tensor in response.output_tensors():
            outputs[tensor.name()] = self._as_made(framework, tensor)
        return outputs

    @staticmethod
    def _as_made(framework: Framework, tensor: Any) -> Any:
        """One output in the caller's framework, where the called model made it; BYTES stay numpy object arrays."""
        if not tensor.is_cpu():
            return framework.from_backend(tensor)  # no copy
        try:
            array = tensor.as_numpy()
        except Exception:  # BF16, which as_numpy cannot read: through DLPack, into memory of its own
            return framework.copy(framework.from_backend(tensor))
        return array if array.dtype == object else framework.adopt(array, "cpu")

    def _on_gpu(self, tensor: Any) -> Any:
        """A GPU output for a numpy caller: as it is where the caller asked for GPU memory, else copied to the host."""
        if self.memory == "gpu":
            return tensor
        try:
            return host_copy(tensor)
        except TypeError as exc:
            raise InferenceError(
                f"model '{self.model}' answered output '{tensor.name()}' in GPU memory, but {exc}; declare "
                'ModelConfig(tensors="torch") on the calling model, or call handle.preferred_memory("cpu")'
            ) from None

    def __repr__(self) -> str:
        return f"<ModelClient {self.model!r}>"


class _OnGpu:
    """A GPU input of a BLS call, checked, waiting for the call's one wait before it leaves as a capsule."""

    __slots__ = ("framework", "name", "value")

    def __init__(self, name: str, value: Any, framework: Any):  # a framework with batch_transfers (torch)
        self.name, self.value, self.framework = name, value, framework


_END = object()  # a stream's last response was read


def _next(responses: Any) -> Any:
    """A stream's next response, or ``_END``."""
    try:
        return next(responses)
    except StopIteration:
        return _END


def _let_go(responses: Any, cancel: str | None, pending: Any) -> None:
    """A stream the caller is done with: finished here (``_finish``), or, when a response is still being waited for
    in another thread (``pending``: the caller's timeout passed), once that wait is over, in the background: the
    caller does not wait for a stream that may not end soon, and the iterator is never read by two threads."""
    if pending is None:
        _finish(responses, cancel)
        return

    def after_the_wait(done: Any) -> None:
        _timed_calls().submit(_finish, responses, cancel)

    pending.add_done_callback(after_the_wait)
    if cancel is not None:  # the wait ends sooner once the called model stops
        cancel_stream(responses, cancel)


def _finish(responses: Any, cancel: str | None = None) -> None:
    """Cancel a stream left early (``cancel``: its token), read what is left of it (its last response makes
    the stub clean it up), then retire it.

    Left unfinished, the stub would keep the iterator (and every response still to come) for the
    rest of its life; dropped at once, it may be destroyed in a thread without the GIL.
    """
    if cancel is not None:
        cancel_stream(responses, cancel)
    try:
        while True:  # next(), not a for loop: iter() of a finished stream starts it over
            next(responses)
    except StopIteration:
        pass
    finally:
        if cancel is not None:
            forget_stream(cancel)
        streams.retire(responses)
