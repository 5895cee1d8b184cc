"""A decoupled model's ``execute``: each step of its callable's generator is one response per request.

Apart from runtime/triton_model.py because a stream has rules of its own: every stream gets FINAL exactly
once, whatever happens; a request cancelled before the callable runs is left out of its batch; once no
request of the batch is wanted, the generator is closed at the step it has just yielded (its ``finally:``
runs then) and nothing more is sent. ``model`` is the ``TritonPythonModel`` serving the requests: its
callable, its request builder, its responses and failures are the non-decoupled path's own.

Two ways in: ``execute``, for any batch of requests, and ``serve_one``, the usual stream's own (one request
that has not waited, ``TritonPythonModel.lean_stream``), which skips what that stream does not need. Both end
in the same stream loop and answer alike (tests/unit/runtime/test_lean_stream.py).
"""

from __future__ import annotations

import inspect
from inspect import CO_ITERABLE_COROUTINE
from time import perf_counter
from types import GeneratorType
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

from . import requested
from .cancellation import is_cancelled
from .errors import InferenceError
from .failures import results_count_message
from .request import EmptyBatchError, Request
from .stream_cancellation import SLOW_STEP_S, STREAM_POLL_S, StreamWatch, serving_stream, stream_done

__all__ = ["execute", "lane", "serve_one"]

_new_request = Request.__new__
_NO_OUTPUT = object()  # a key no step has: a model of several outputs takes model.response at every step


def execute(model: Any, requests: list[Any], waited: bool = True, senders: list[Any] | None = None) -> None:
    """Serve ``requests`` through ``model``'s callable, a response per step and request, then FINAL.

    ``waited``: whether they may have waited long enough to be cancelled meanwhile (``model.queued_long``):
    then they are asked before the callable runs, else at its first step as usual (``StreamWatch``).
    """
    senders = senders or [request.get_response_sender() for request in requests]
    watch = StreamWatch(requests, asked=waited)
    if waited and not all(watch.live):
        return _execute_live(model, requests, senders, watch.live)
    try:
        batch = model.requests(requests)
    except EmptyBatchError:
        return _execute_apart(model, requests, senders)
    except BaseException as exc:
        return _fail(model, exc, senders, watch.live)
    try:
        results = model.infer_func(batch)
    except BaseException as exc:
        return _fail(model, exc, senders, watch.live)
    return _serve(model, results, senders, watch, asking(model, batch))


def asking(model: Any, batch: list[Any]) -> list[Any] | None:
    """``batch`` where some client asked for fewer than all outputs (each step then asks which), else None: asked
    once a stream, not at every step (runtime/requested.py)."""
    return batch if requested.wanted(batch, len(model.output_plans)) is not None else None


def _serve(model: Any, results: Any, senders: list[Any], watch: StreamWatch, batch: list[Any] | None = None) -> None:
    """From the callable's result on: awaited if it is awaitable, its steps sent, then FINAL to every stream;
    ``batch``: the callable's requests, where some client asked for fewer outputs than all (``asking``)."""
    try:
        # A plain generator is not awaitable (the ABC check inspect makes is skipped); one marked by
        # types.coroutine is.
        if (type(results) is not GeneratorType or results.gi_code.co_flags & CO_ITERABLE_COROUTINE) and (
            inspect.isawaitable(results)
        ):
            results = model._run(results)
        if len(senders) == 1 and type(results) is GeneratorType:
            _stream_one(model, results, senders[0], watch.poll, watch.resumed, batch)
        elif isinstance(results, (list, tuple)):
            _send_step(model, results, senders, watch.live, batch)
        else:
            _stream(model, results, senders, watch, batch)
    except BaseException as exc:
        return _fail(model, exc, senders, watch.live)
    for sender in senders:
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    return None


def _fail(model: Any, exc: BaseException, senders: list[Any], live: list[bool]) -> None:
    """As in a non-decoupled execute, the error is each stream's answer; a cancelled stream gets its FINAL alone."""
    errors = iter(model.failures(exc, sum(live)))  # one response object each: triton_model's failures says why
    for sender, wanted in zip(senders, live, strict=True):
        if wanted:
            sender.send(next(errors), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        else:
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    return None


def serve_one(model: Any, request: Any) -> None:
    """``execute`` for the usual stream: one request that has not waited, of a model that takes numpy inputs
    as the stub hands them, with no batch axis to check, and records no request in flight
    (``TritonPythonModel.lean_stream``). A plain generator is streamed at once; any other result takes
    ``execute``'s way from there. Written out because what a stream does before its first response is what
    its reader waits for: the general way (``execute``, ``StreamWatch``, ``_request``) cost a 20-token stream 20 k
    more stub instructions (callgrind, bench/analysis.md). tests/unit/runtime/test_lean_stream.py holds the two ways
    to one answer.
    """
    sender = request.get_response_sender()
    try:
        data = _new_request(Request)  # Request(source=request) without its __init__'s frame: all the fields it sets
        data._source, data._parameters, data._handed = request, None, True
        for tensor in request.inputs():
            data[tensor.name()] = tensor.as_numpy()
        results = model.infer_func([data])
        plain = type(results) is GeneratorType and not results.gi_code.co_flags & CO_ITERABLE_COROUTINE
        batch = asking(model, [data]) if len(model.output_plans) > 1 else None
        if plain:
            _stream_one(model, results, sender, lambda: not is_cancelled(request), perf_counter(), batch)
    except BaseException as exc:
        return _fail(model, exc, [sender], [not is_cancelled(request)])
    if not plain:
        return _serve(model, results, [sender], StreamWatch([request]), batch)
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    return None


def _execute_live(model: Any, requests: list[Any], senders: list[Any], live: list[bool]) -> None:
    """End the streams of requests cancelled before the callable ran; serve the others."""
    kept, kept_senders = [], []
    for request, sender, wanted in zip(requests, senders, live, strict=True):
        if wanted:
            kept.append(request)
            kept_senders.append(sender)
        else:
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    if kept:
        execute(model, kept, False, kept_senders)


def _execute_apart(model: Any, requests: list[Any], senders: list[Any]) -> None:
    """An empty-batch request's stream ends with its error; the others, which may share its batch, are served."""
    kept, kept_senders = [], []
    for request, sender in zip(requests, senders, strict=True):
        error = model._empty_batch(request)
        if error is None:
            kept.append(request)
            kept_senders.append(sender)
        else:
            sender.send(model.failure(error), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    if kept:
        execute(model, kept, False, kept_senders)


def _stream(model: Any, results: Any, senders: list[Any], watch: StreamWatch, batch: list[Any] | None) -> None:
    """Send each step to the requests still wanted; close the generator once none is."""
    steps = _steps(model, results)
    flags, cancelled = serving_stream(), False  # the body's stream_cancelled() flags, set if the readers leave
    try:
        for step in steps:
            if not watch.step():
                cancelled = True
                return
            _send_step(model, step, senders, watch.live, batch)
            watch.resumed = perf_counter()
    finally:
        stream_done(flags, cancelled)  # before the close: the generator's finally: sees it too
        steps.close()
        if inspect.isasyncgen(results):
            model._run(results.aclose())
        elif inspect.isgenerator(results):
            results.close()


def _stream_one(
    model: Any, results: Any, sender: Any, poll: Any, resumed: float, batch: list[Any] | None = None
) -> None:
    """``_stream`` for one request and a plain generator, the usual stream (max_batch_size 0): the same rules,
    with little more per step than a hand-written loop, so ``StreamWatch.step``'s rule is written out on locals.

    A step of the one declared output as an array that ``OutputPlan.accepts`` goes out as it is, as
    ``model.response`` would send it, and any other takes that. For a plan with no shape to check (not
    strict), ``accepts`` is an ndarray of its very dtype, with a dimension, C-contiguous: written out too,
    and asked only where that fails (tests/unit/emit/test_fast_lane.py holds both paths to one answer).
    """
    send, response = sender.send, model.responses
    name, accepts, dtype = model.stream_lane
    ndarray, tensor, inference_response = np.ndarray, pb_utils.Tensor, pb_utils.InferenceResponse
    clock, slow, due = perf_counter, SLOW_STEP_S, STREAM_POLL_S
    work = 0.0
    flags, cancelled = serving_stream(), False  # as in _stream
    try:
        for step in results:
            took = clock() - resumed
            work += took
            if took >= slow or work >= due:
                if not poll():
                    cancelled = True
                    return
                work = 0.0
            if type(step) is not list and not isinstance(step, (list, tuple)) or len(step) != 1:
                raise InferenceError(results_count_message(model.model_name, step, 1))
            result = step[0]
            if type(result) is dict and len(result) == 1:
                value = result.get(name)
                if type(value) is ndarray and (
                    value.dtype is dtype and value.ndim and value.flags.c_contiguous or accepts(value)
                ):
                    send(inference_response([tensor(name, value)]))  # positional: no keyword lookup
                    resumed = clock()
                    continue
            send(response([result], batch)[0])
            resumed = clock()
    finally:
        stream_done(flags, cancelled)
        results.close()


def lane(plans: list[Any]) -> tuple[Any, Any, Any]:
    """``_stream_one``'s fast lane for a model's output plans, worked out once per instance: the one output's
    name, its ``accepts``, and its dtype where no shape is checked (not strict: the loop writes ``accepts``
    out). A model of several outputs, or none, has no lane: ``model.response`` takes every step."""
    if len(plans) != 1:
        return _NO_OUTPUT, _never, None
    plan = plans[0]
    return plan.name, plan.accepts, None if plan.strict else plan.dtype


def _never(value: Any) -> bool:
    return False


def _send_step(model: Any, step: Any, senders: list[Any], live: list[bool], batch: list[Any] | None = None) -> None:
    if not isinstance(step, (list, tuple)) or len(step) != len(senders):
        raise InferenceError(results_count_message(model.model_name, step, len(senders)))
    keep = [index for index, still in enumerate(live) if still]
    requests = [batch[index] for index in keep] if batch is not None else None
    responses = model.responses([step[index] for index in keep], requests)  # a GPU instance's outputs leave together
    for index, response in zip(keep, responses, strict=True):
        senders[index].send(response)


def _steps(model: Any, results: Any) -> Any:
    """Iterate a generator, or an async generator on the model instance's event loop."""
    if inspect.isasyncgen(results):
        while True:
            try:
                yield model._run(results.__anext__())
            except StopAsyncIteration:
                return
    yield from results
