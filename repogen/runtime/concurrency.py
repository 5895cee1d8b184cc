"""Async callables served concurrently: many requests of one instance in flight at once.

python_backend runs one ``execute`` at a time per instance, so an ``async def`` callable awaited inside ``execute``
holds its instance for its whole wait. Here ``execute`` only reads the requests' inputs, waits for room under the
model's ``max_concurrency`` (backpressure: beyond it the requests wait in Triton's queue, where its queue policy and
timeouts apply), starts the call on an event loop this instance runs in a thread of its own, and returns; each request
is answered through its response sender when its call ends. Where python_backend allows it: a decoupled request is
answered through its sender on every release, and python_backend itself runs decoupled coroutines concurrently from
r24.04 (NGC 24.04); a non-decoupled one may be answered through its sender from r24.06 (#364). Before those, and on a
24.04/24.05 server for a non-decoupled model, the instance serves one call at a time as it always did (said once in
its log; the build warns too).

A non-decoupled model stays non-decoupled: tritonserver (r24.10 to r26.x, ``CheckTransactionPolicy`` in
http_server.cc, ``ModelInfer`` in grpc/infer_handler.cc) refuses a plain HTTP or gRPC infer call to a decoupled model,
so generating one as decoupled would break every client that is not a gRPC stream.

Each call is a task of its own, so a failure, and a cancellation, reach only the requests of that call: its requests
are asked ``is_cancelled()`` before it starts (when they may have waited) and every ``CANCEL_POLL_S`` while it runs;
once none is wanted the task is cancelled, which raises ``CancelledError`` at the callable's ``await`` (its
``finally:`` runs) and answers them as cancelled. A stream is also asked at its steps, as runtime/decoupled.py asks.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import triton_python_backend_utils as pb_utils

from . import streams
from .cancellation import cancelled_response
from .contract import DEFAULT_MAX_CONCURRENCY
from .decoupled import asking
from .errors import InferenceError
from .failures import log, results_count_message
from .instance import is_async
from .request import EmptyBatchError
from .stream_cancellation import StreamWatch, serving_stream, stream_done
from .tracing import serving_task

__all__ = ["CANCEL_POLL_S", "DEFAULT_MAX_CONCURRENCY", "ConcurrentCalls", "is_async", "release_problem", "start"]

CANCEL_POLL_S = 0.2
"""A call that has run this long is asked whether its requests are still wanted, and again as often. Asking is a
round trip to the server process (~25 µs): a call that waits tens of ms is never asked (under load at c=64, asking
every 50 ms cost the request/response path ~5 % of its throughput), one that waits seconds is stopped within this."""
FINAL = 1  # TRITONSERVER_RESPONSE_COMPLETE_FINAL, as a constant: pb_utils' is attached after import
CANCEL_CHECK_AFTER_S = 0.01  # as runtime/triton_model.py's: a wait this long may have outlived a client
_SEQUENTIAL = "serves one request at a time on this release"


def release_problem(decoupled: bool) -> str | None:
    """Why this release serves an async callable one request at a time (None where it need not): python_backend before
    r24.04 runs no coroutine of its own concurrently, and before r24.06 answers a non-decoupled request only through
    ``execute``'s return (the first request tells: ``ConcurrentCalls.execute``)."""
    backend = sys.modules.get("c_python_backend_utils")
    if backend is None or hasattr(backend, "async_event_future_done_callback"):  # r24.04+ (python_backend #350)
        return None
    need = "24.04" if decoupled else "24.06"
    return (
        f"its async callable {_SEQUENTIAL} (python_backend before r{need}); NGC {need} and later serve it concurrently"
    )


def start(model: Any, bound: int | None, decoupled: bool, log: Any) -> ConcurrentCalls | None:
    """Serve ``model`` (a ``TritonPythonModel``) concurrently where its callable is async and the release allows it."""
    if not is_async(model.infer_func) or bound == 0:  # 0: the build says one at a time (a sequence model)
        return None
    problem = release_problem(decoupled)
    if problem is not None:
        log("log_warn", f"model '{model.model_name}': {problem}")
        return None
    calls = ConcurrentCalls(model, bound or DEFAULT_MAX_CONCURRENCY, decoupled)
    log("log_info", f"model '{model.model_name}': async callable, up to {calls.bound} requests in flight at once")
    return calls


class _Call:
    """One call of the callable in flight: its requests, their senders, and the task running it."""

    __slots__ = ("asked", "asking", "batch", "cancelled", "freed", "requests", "senders", "task", "watch")

    def __init__(self, requests: list[Any], senders: list[Any], batch: list[Any], watch: StreamWatch, asking: Any):
        self.requests, self.senders, self.batch, self.watch = requests, senders, batch, watch
        self.asking: list[Any] | None = asking  # the batch, where a client asked for fewer outputs than all
        self.asked = time.perf_counter()  # when its requests were last asked (or it was made)
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False  # set when every request left and the task was cancelled for it
        self.freed = False  # its requests no longer count against the bound (ConcurrentCalls._free)


class ConcurrentCalls:
    """The ``execute`` of one instance whose callable is async: calls start on this instance's own event loop."""

    def __init__(self, model: Any, bound: int, decoupled: bool):
        self._model = model
        self._bound = max(1, int(bound))
        self._decoupled = decoupled
        self._held = 0  # requests in flight (guarded by _room)
        self._held_up = False  # whether the last execute waited for room long enough for its followers to be asked
        self._room = threading.Condition()
        self._calls: set[_Call] = set()  # the event loop's thread only
        self._streaming = 0  # streams being stepped on the event loop now (its thread only)
        self._watching = False
        self._executing: Any = None  # the request this class registered with runtime.streams (its barrier)
        self._loop = asyncio.new_event_loop()
        # BLS's async_exec runs each call in the running loop's default executor: size it for fan-outs, not the CPUs
        self._executor = ThreadPoolExecutor(max(32, 2 * self._bound), thread_name_prefix="repogen-bls")
        self._loop.set_default_executor(self._executor)
        self._thread = threading.Thread(target=self._loop.run_forever, name="repogen-async", daemon=True)
        self._thread.start()

    @property
    def bound(self) -> int:
        return self._bound

    def execute(self, requests: list[Any]) -> list[Any] | None:
        model = self._model
        if model.stopped is not None:
            return model._refuse(requests)
        try:
            senders = [request.get_response_sender() for request in requests]
        except Exception as exc:  # a non-decoupled model before r24.06: no sender, one call at a time from now on
            return self._sequential(requests, exc)
        # Asked whether they were cancelled only where they may have waited: this execute returns at once unless it
        # waits for room under the bound, so a request waits in Triton's queue behind the batcher's delay, a rate
        # limiter, or an execute that waited for room (this one, or the one before, whose wait they queued behind).
        # An idle instance's next request has not waited (asking it cost c=1 3 % of its requests/s).
        waited = self._admit(len(requests))
        asked, self._held_up = waited or self._held_up or model.queue_holds, waited
        watch = StreamWatch(requests, asked=asked)
        if not all(watch.live):
            requests, senders = self._answer_cancelled(requests, senders, watch.live)
            if not requests:
                return None
            watch = StreamWatch(requests)
        try:
            batch = model.requests(requests)
        except EmptyBatchError:
            requests, senders, batch = self._answer_empty(requests, senders)
            if not requests:
                return None
            watch = StreamWatch(requests)
        except BaseException as exc:  # an input the callable's framework cannot take: each request's answer
            self._send_all(senders, model.failures(exc, len(requests)))
            self._release(len(requests))
            return None
        self._loop.call_soon_threadsafe(self._start, _Call(requests, senders, batch, watch, asking(model, batch)))
        return None

    def close(self) -> None:
        """Stop the event loop (the model unloads: Triton has had every call's final response)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
        self._executor.shutdown(wait=False)

    # -- the stub's thread -------------------------------------------------------------------------

    def _admit(self, count: int) -> bool:
        """Wait until ``count`` more requests fit under the bound (a call larger than the bound waits for none);
        True when that took long enough for them to have been cancelled meanwhile."""
        began = None
        with self._room:
            while self._held and self._held + count > self._bound:
                began = began or time.perf_counter()
                self._room.wait()
            self._held += count
        return began is not None and time.perf_counter() - began >= CANCEL_CHECK_AFTER_S

    def _release(self, count: int) -> None:
        with self._room:
            self._held -= count
            self._room.notify_all()

    def _sequential(self, requests: list[Any], exc: Exception) -> list[Any] | None:
        """This release cannot answer a non-decoupled request through its sender: serve as the runtime always did."""
        model = self._model
        model.__dict__.pop("execute", None)  # the class's own from now on
        log("log_warn", f"model '{model.model_name}': its async callable {_SEQUENTIAL} ({exc})")
        self.close()
        return model.execute(requests)

    def _answer_cancelled(self, requests: list[Any], senders: list[Any], live: list[bool]) -> tuple[list, list]:
        """Answer the requests cancelled while they waited; the others go on."""
        kept, kept_senders = [], []
        for request, sender, wanted in zip(requests, senders, live, strict=True):
            if wanted:
                kept.append(request)
                kept_senders.append(sender)
            else:
                self._send_cancelled(sender)
        self._release(len(requests) - len(kept))
        return kept, kept_senders

    def _answer_empty(self, requests: list[Any], senders: list[Any]) -> tuple[list, list, list]:
        """Answer each empty-batch request with its error (2.39/2.41 pass them on); the others go on."""
        model = self._model
        kept, kept_senders = [], []
        for request, sender in zip(requests, senders, strict=True):
            error = model._empty_batch(request)
            if error is None:
                kept.append(request)
                kept_senders.append(sender)
            else:
                sender.send(model.failure(error), flags=FINAL)
        self._release(len(requests) - len(kept))
        return kept, kept_senders, (model.requests(kept) if kept else [])

    def _send_cancelled(self, sender: Any) -> None:
        if self._decoupled:
            sender.send(flags=FINAL)
        else:
            sender.send(cancelled_response(pb_utils, self._model.model_name), flags=FINAL)

    @staticmethod
    def _send_all(senders: list[Any], responses: list[Any]) -> None:
        for sender, response in zip(senders, responses, strict=True):  # one object each (Server.failures says why)
            sender.send(response, flags=FINAL)

    # -- the event loop's thread -------------------------------------------------------------------

    def _start(self, call: _Call) -> None:
        call.task = self._loop.create_task(self._served(call))
        self._calls.add(call)
        if streams.executing_now() is None:  # the barrier runtime.streams releases drained BLS streams behind
            self._executing = call.requests[0]
            streams.executing(self._executing)
        if not self._watching:
            self._watching = True
            self._loop.call_later(CANCEL_POLL_S / 2, self._watch)

    def _watch(self) -> None:
        """Ask the calls not asked for ``CANCEL_POLL_S`` whether anyone still wants them; cancel those nobody does."""
        now = time.perf_counter()
        for call in list(self._calls):
            if now - call.asked >= CANCEL_POLL_S and not call.cancelled:
                call.asked = now
                if not call.watch.poll():
                    call.cancelled = True
                    if call.task is not None:
                        call.task.cancel()
        if self._calls:
            self._loop.call_later(CANCEL_POLL_S / 2, self._watch)
        else:
            self._watching = False

    async def _served(self, call: _Call) -> None:
        model, count = self._model, len(call.requests)
        serving_task(call.requests[0])  # the request whose trace its BLS calls carry
        try:
            results = model.infer_func(call.batch)
            if self._decoupled and (inspect.isasyncgen(results) or inspect.isgenerator(results)):
                await self._stream(call, results)
                self._free(call)
                for sender in call.senders:
                    sender.send(flags=FINAL)
            else:
                if inspect.isawaitable(results):
                    results = await results
                self._send(call, model.checked_results(results, count), final=True)
        except asyncio.CancelledError:
            if not call.cancelled:  # the loop is closing: the server stops
                raise
            self._free(call)
            for sender in call.senders:
                self._send_cancelled(sender)
        except BaseException as exc:  # the callable's failure, SystemExit too, is the answer to this call's requests
            live = [wanted for wanted in call.watch.live]
            errors = model.failures(exc, len(live))  # one object per request: one shared by two kills 2.51
            self._free(call)
            for sender, wanted, error in zip(call.senders, live, errors, strict=True):
                if self._decoupled and not wanted:
                    sender.send(flags=FINAL)
                else:
                    sender.send(error, flags=FINAL)
        finally:
            self._end(call)

    def _send(self, call: _Call, results: Any, final: bool) -> None:
        """One response per request still wanted, with the final flag where ``final`` (one send: a request's whole
        answer; a stream that was cancelled gets the flag alone). A non-decoupled model answers every request."""
        if not isinstance(results, (list, tuple)) or len(results) != len(call.senders):
            raise InferenceError(results_count_message(self._model.model_name, results, len(call.senders)))
        if not self._decoupled:  # the common case, in few steps: the loop's thread sets the rate under load
            responses = self._model.responses(results, call.asking)
            self._free(call)
            for sender, response in zip(call.senders, responses, strict=True):
                sender.send(response, flags=FINAL)
            return
        live = call.watch.live
        if not final and call.asking is None and len(live) == 1 and live[0]:  # a stream's step: one request's
            call.senders[0].send(self._model.responses(results)[0])
            return
        keep = [index for index, still in enumerate(live) if still]
        requests = [call.asking[index] for index in keep] if call.asking is not None else None
        responses = iter(self._model.responses([results[index] for index in keep], requests))
        if final:
            self._free(call)
        for sender, still in zip(call.senders, live, strict=True):
            if still and final:
                sender.send(next(responses), flags=FINAL)
            elif still:
                sender.send(next(responses))
            elif final:
                sender.send(flags=FINAL)

    async def _stream(self, call: _Call, results: Any) -> None:
        """Each step of an (async) generator, one response per request still wanted; closed once none is."""
        flags, cancelled = serving_stream(), False  # this task's own context: streams in flight do not mix
        watch, stepping = call.watch, inspect.isasyncgen(results)
        self._streaming += 1
        try:
            while True:
                try:
                    step = await results.__anext__() if stepping else next(results)
                except (StopAsyncIteration, StopIteration):
                    return
                if not watch.step(self._streaming):
                    cancelled = True
                    return
                self._send(call, step, final=False)
                watch.resumed = time.perf_counter()
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            self._streaming -= 1
            stream_done(flags, cancelled)
            if stepping:
                await results.aclose()
            else:
                results.close()

    def _end(self, call: _Call) -> None:
        self._calls.discard(call)
        if self._executing is not None and self._executing in call.requests:  # answered: no barrier any more
            successor = next(iter(self._calls), None)
            self._executing = successor.requests[0] if successor is not None else None
            streams.executing(self._executing)
        self._free(call)

    def _free(self, call: _Call) -> None:
        """Take ``call``'s requests off the bound, once: before their final responses go out, so that the request
        a client sends as soon as it reads its answer finds room. Freed after the send, it could reach ``execute``
        first (the loop thread waits for the GIL on two busy cores), and ``execute`` would wait for this thread to
        free it, holding every request behind it (python_backend runs one ``execute`` at a time)."""
        if not call.freed:
            call.freed = True
            self._release(len(call.requests))
