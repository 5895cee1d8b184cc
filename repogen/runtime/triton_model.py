"""The ``TritonPythonModel`` behind every generated ``model.py``.

Per request it builds a PyTriton-style ``Request`` (each input through ``as_numpy``, the stub's
own copy of it, or as the tensor of the framework the model declared: runtime/tensors.py), hands
the list to the user's callable and turns each result into a response. Whatever the
callable raises (``SystemExit`` and ``KeyboardInterrupt`` too) becomes an error response
``"<Type>: <message>"`` and the model keeps serving; only ``PyTritonUnrecoverableError`` stops
it, and with it the server (PyTriton's contract).

Generated ``model.py`` files subclass it and runtime/fused.py drives step models through it, so its
fast path is a small public surface: ``batch_call``, ``infer_func``, ``output_plans``, ``stopped``,
``last_execute``, ``ask_after``, ``checked_results``, ``batch_results``, ``output_pairs``, ``finish_batch``,
``finish_fused``, ``response``, ``responses``, ``failure``, ``failures`` and ``failed_together``. Generated files use
nothing else of it, so the rest can change without a template changing (tested in
tests/unit/architecture/test_fast_path_surface.py). Whether an output takes the fast lane is
``OutputPlan.accepts``, one rule.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import time
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

from .cancellation import Watch, cancelled_response
from .context import TritonContext, instance_index
from .contract import BF16, HOST, NUMPY, Metadata, inputs_on_cpu, parse, read_argv
from .conversion import OutputPlan
from .decorator_base import then
from .errors import CLIENT_FAULTS, InferenceError, PayloadError, error_code
from .failures import error_message, log, results_count_message
from .instance import is_async, lingering_message, lingering_threads, made_callable
from .internals import report_load
from .metrics import FailureCounter
from .payload import load_payload, loading_on
from .request import EmptyBatchError, Request, batched_input_ranks
from .request_decorators import specializable, split_outputs
from .responses import Responses
from .stub import numpy_problem
from .tensors import Placement

# Requests are asked whether they were cancelled when they may have waited this long (queued_long).
CANCEL_CHECK_AFTER_S = 0.01
_STREAMS = f"{__package__}.streams"


def stream_consumers() -> int:
    """Clients of decoupled models unpickled in this process: runtime/streams.py counts them, loaded (and carried)
    only with a payload's BLS clients."""
    streams = sys.modules.get(_STREAMS)
    return 0 if streams is None else int(streams.consumers())


class TritonPythonModel(Responses):
    """Serves one instance of a repogen-built model (its responses: responses.py)."""

    _executing: Any
    readiness: Any
    """What answers the model's ready endpoint (its callable's ``is_ready``); None: ready once loaded."""

    def initialize(self, args: dict[str, str]) -> None:
        numpy = numpy_problem(args["model_name"], np.__version__)
        if numpy is not None:
            raise PayloadError(numpy)
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        streaming = stream_consumers()
        # tensors made on a GPU at build time land on this instance's device; it serves one of infer_func=[...]
        instance = instance_index(args, json.loads(args["model_config"]))
        with loading_on(TritonContext.device_of(args), args["model_name"], instance):
            meta, payload = load_payload(version_dir, args["model_name"])
        streaming = stream_consumers() > streaming  # the payload holds clients of decoupled models
        funcs = payload.get("infer_funcs")
        if "fused" in payload:  # an ensemble built with fuse=True: its steps are this model's callable
            from .fused import FusedPipeline

            outputs = [t["name"] for t in json.loads(args["model_config"]).get("output", [])]
            imports = meta.get(Metadata.REQUIREMENTS) or ()
            funcs = [FusedPipeline.create(args, payload["fused"], outputs, TritonPythonModel, imports)]
        tensors, strict = meta.get(Metadata.TENSORS, NUMPY), bool(meta.get(Metadata.STRICT, False))
        requirements, output_memory = meta.get(Metadata.REQUIREMENTS), meta.get(Metadata.OUTPUT_MEMORY, HOST)
        self.configure(args, funcs, strict, tensors, requirements, output_memory)
        if streaming:  # the general execute records the request in flight that runtime.streams needs
            from .streams import executing

            self.batch_call = None
            self.lean_stream = False
            self._executing = executing
        self._concurrent = self._concurrency(meta.get(Metadata.CONCURRENCY))
        if self._concurrent is not None:  # an async callable: its calls overlap, answered through response senders
            self.execute = self._concurrent.execute  # type: ignore[method-assign]
        argv = read_argv()
        self._stub = parse(argv)  # after configure, which resets it
        server_argv = read_argv(f"/proc/{self._stub.server_pid}/cmdline") if self._stub is not None else None
        if self._departure is not None and self._stub is not None:  # the pool the server was started with
            from .transfers import pool_bytes

            self._departure.pool = pool_bytes(server_argv, int(args.get("model_instance_device_id", 0) or 0))
        self._failures: FailureCounter | None = FailureCounter(pb_utils, self._model, args["model_version"])
        self._unstoppable = report_load(pb_utils, log, args, version_dir, argv, self._stub, streaming, self._failures)
        self._bind_metrics(meta.get(Metadata.METRICS) or [], args)
        if self.readiness is not None:  # the stub looks for is_ready once, after initialize (r26.03+)
            self.is_ready = self.readiness
        if server_argv is not None and TritonContext.from_args(args).instance_index == 0:  # once per model
            try:  # carried where the model depends on server flags (emit/vendoring.py); the others need none
                from .server_flags import report_missing
            except ModuleNotFoundError as exc:
                if exc.name != f"{__package__}.server_flags":
                    raise
            else:
                report_missing(pb_utils, log, self._model, args, server_argv)

    @property
    def model_name(self) -> str:
        return self._model

    def configure(
        self,
        args: dict[str, str],
        funcs: list[Any],
        strict: bool,
        tensors: str = NUMPY,
        imports: Any = None,
        output_memory: str = HOST,
    ) -> None:
        """Set up this instance from Triton's arguments; ``repogen.local`` calls it without a payload file.

        ``tensors`` is what the callable takes (``numpy``, ``torch``, ...); ``imports``, the modules the build
        recorded the payload importing, say which frameworks to point at the instance's GPU before the user's
        class or factory is constructed; ``output_memory`` (``host`` or ``gpu``), where its GPU outputs' readers take
        them (runtime/transfers.py).
        """
        self._model = args["model_name"]
        config = json.loads(args["model_config"])
        context = TritonContext.from_args(args, tensors)
        self.placement = Placement(tensors, context.device)
        made = made_callable(self._model, funcs, context, imports, lambda line: log("log_error", line), error_message)
        self.infer_func = made[0]  # generated execute calls it (the fast path's surface)
        self.readiness = made[1]
        self._decoupled = bool(config.get("model_transaction_policy", {}).get("decoupled", False))
        if self._decoupled:  # runtime/decoupled.py ships with decoupled models alone (emit/vendoring.py)
            from . import decoupled

            self._decoupled_path: Any = decoupled
        batched = int(config.get("max_batch_size", 0)) > 0
        self._ranks = batched_input_ranks(config) if batched else {}
        parameters = {key: value.get("string_value", "") for key, value in config.get("parameters", {}).items()}
        data_types = {t["name"]: t["data_type"] for t in config.get("input", [])}
        self._read = self.placement.reader(self._model, data_types)
        # numpy from host memory, read inline by _request; anything else through the placement's reader
        self._cpu_inputs = (
            self.placement.framework is None and inputs_on_cpu(parameters) and BF16 not in data_types.values()
        )
        self.output_plans = [
            OutputPlan(self._model, t["name"], t["data_type"], [int(d) for d in t["dims"]], batched, strict)
            for t in config.get("output", [])
        ]
        self._arrival = self.placement.arrival
        self._departure = self.placement.departure(pb_utils, self._model, output_memory, log)
        batch_call = specializable(self.infer_func) if batched and not self._decoupled else None
        self._lane: Any = None
        if self.placement.framework is not None and batch_call is not None:
            from .gpu_batch import batch_lane  # carried with frameworks.py (emit/vendoring.OPTIONAL)

            self._lane = batch_lane(self.placement.framework, context.device, batch_call, self._ranks, data_types,
                                    self.output_plans, inputs_on_cpu(parameters), output_memory)  # fmt: skip
        self._declared = frozenset(plan.name for plan in self.output_plans)
        self._order = tuple(plan.name for plan in self.output_plans)
        self.stream_lane = self._decoupled_path.lane(self.output_plans) if self._decoupled else None
        self._output_count = len(self.output_plans)
        self._strict = strict
        self._loop: asyncio.AbstractEventLoop | None = None
        self._concurrent = None  # set by initialize for an async callable
        self._stub = None  # set by initialize: None outside a backend stub (repogen.local)
        self._executing = None  # set by initialize where the payload drains BLS streams: streams.executing
        self._unstoppable = None  # set by initialize: why the stub cannot stop its server, if it cannot
        self._failures = None  # set by initialize: a fused step's failure is counted once, by the fused model
        self.stopped: str | None = None  # the message of an unrecoverable error, once raised
        self.batch_call = batch_call
        self.lean_stream = self._decoupled and self._cpu_inputs and not batched
        """Whether a lone stream that has not waited takes ``decoupled.serve_one``, the usual stream's own way."""
        self.last_execute = -CANCEL_CHECK_AFTER_S  # the first requests are asked: nothing says how long they waited
        """When the last ``execute`` started (``time.perf_counter``): ``queued_long``'s rule reads it."""
        delay_us = int(config.get("dynamic_batching", {}).get("max_queue_delay_microseconds", 0))
        self.ask_after = 0.0 if delay_us >= CANCEL_CHECK_AFTER_S * 1e6 else CANCEL_CHECK_AFTER_S
        """Seconds since the last ``execute`` after which requests are asked: always where the batcher may hold
        them that long."""
        self.queue_holds = not self.ask_after or any(g.get("rate_limiter") for g in config.get("instance_group") or ())
        """Whether requests may wait in Triton's queue while this instance is idle (the batcher's delay, a rate
        limiter): runtime/concurrency.py asks them then, its ``execute`` returning at once."""

    def _concurrency(self, bound: int | None) -> Any:
        """The concurrent calls of an async callable (runtime/concurrency.py, carried where the build saw one or a
        factory); None where calls run one at a time (0: a sequence model's)."""
        if bound == 0 or not is_async(self.infer_func):
            return None
        from . import concurrency

        return concurrency.start(self, bound, self._decoupled, log)

    def _bind_metrics(self, declared: list[Any], args: dict[str, str]) -> None:
        """The user's metrics the payload declares, bound to the server's (runtime/user_metrics.py, carried then)."""
        if not declared:
            return
        from .user_metrics import bind_metrics

        for problem in bind_metrics(pb_utils, self._model, args["model_version"], declared):
            if problem:
                log("log_warn", f"model '{self._model}': {problem}")

    def execute(self, requests: list[Any]) -> list[Any] | None:
        lane = self._lane
        if lane is not None and self._executing is None and self.stopped is None:  # runtime/gpu_batch.py's batch
            now = time.perf_counter()  # queued_long's rule, written out
            if now - self.last_execute < self.ask_after:
                self.last_execute = now
                return lane.serve(self, requests, pb_utils) or self._execute(requests, False, lane=False)
        if self.stopped is not None:
            return self._refuse(requests)
        waited = self.queued_long()
        if self.lean_stream and not waited and len(requests) == 1:
            self._decoupled_path.serve_one(self, requests[0])
            return None
        if waited:
            answers = self.answer_cancelled(requests)
            if answers is not None:
                return answers
        return self._execute(requests, waited)

    def queued_long(self) -> bool:
        """Whether the requests of this ``execute`` may have waited long enough to have been cancelled meanwhile.

        Asking a request costs a round trip to the server process (~25 µs each, measured on 2.51), too
        much for every request of a fast model, and a request cannot wait in the queue longer than the
        execute before it plus the batcher's delay. So requests are asked when the previous ``execute``
        started at least ``CANCEL_CHECK_AFTER_S`` ago (a long one, or an idle instance) or the batcher
        may hold them that long. A stream's requests not asked here are asked at its steps (``StreamWatch``): a
        stream cancelled while it waited behind short ones makes a fast first step, or is closed at a slow one.
        """
        now = time.perf_counter()
        waited = now - self.last_execute >= self.ask_after
        self.last_execute = now
        return waited

    def answer_cancelled(self, requests: list[Any]) -> list[Any] | None:
        """None when every request is still wanted (the caller goes on as usual); else the answers: CANCELLED
        for those cancelled before their callable ran, the others executed as one batch."""
        if self._decoupled:  # decoupled.execute asks them, before the callable runs and at its steps
            return None
        watch = Watch(requests)
        if watch.poll() and all(watch.live):
            return None
        kept = [request for request, live in zip(requests, watch.live, strict=True) if live]
        served = iter((self._execute(kept) if kept else None) or [])
        return [next(served) if live else cancelled_response(pb_utils, self._model) for live in watch.live]

    def _execute(self, requests: list[Any], waited: bool = True, lane: bool = True) -> list[Any] | None:
        if self._executing is not None:  # in flight until answered: BLS streams drained meanwhile use it (streams.py)
            self._executing(requests[0])
        try:
            if self._decoupled:
                self._decoupled_path.execute(self, requests, waited)
                return None
            if lane and self._lane is not None:  # a GPU instance's batch, straight through (runtime/gpu_batch.py)
                answers = self._lane.serve(self, requests, pb_utils)
                if answers is not None:
                    return answers
            try:
                batch = self.requests(requests)
                results = self.checked_results(self.infer_func(batch), len(requests))
            except EmptyBatchError:
                return self._execute_apart(requests)
            except BaseException as exc:  # the callable's failure, SystemExit too, is the clients' answer
                return self.failed_together(exc, requests)
            return self.responses(results, batch)
        finally:
            if self._executing is not None:
                self._executing(None)

    def failed_together(self, exc: BaseException, requests: list[Any]) -> list[Any]:
        """The answers to ``requests`` whose one call raised ``exc``: that error to each, or, where it says a
        request was wrong (INVALID_ARG, NOT_FOUND: runtime/errors.py) and several shared the call (the dynamic
        batcher merges clients), each request served again alone, so that only the wrong ones fail."""
        if len(requests) < 2 or error_code(exc) not in CLIENT_FAULTS or self._decoupled:
            return self.failures(exc, len(requests))
        log("log_verbose", f"model '{self._model}': {len(requests)} requests failed together ({error_message(exc)}); "
            "serving each alone")  # fmt: skip
        return [answer for request in requests for answer in self._execute([request]) or ()]

    def checked_results(self, results: Any, count: int) -> Any:
        """The callable's list of results, awaited if need be, checked to hold one per request."""
        if type(results) is not list:  # a list is the common case; inspect.isawaitable costs ~1 µs
            if inspect.isawaitable(results):
                results = self._run(results)
            if not isinstance(results, (list, tuple)):
                raise InferenceError(results_count_message(self._model, results, count))
        if len(results) != count:
            raise InferenceError(results_count_message(self._model, results, count))
        return results

    def finish_batch(self, outputs: Any, sizes: list[int], requests: list[Any] | None = None) -> list[Any]:
        """The general path from where a specialized ``execute`` (model_batch.py.tmpl) left off.

        ``outputs`` is what the ``@batch`` function returned for ``requests`` (the server's) of ``sizes`` rows each;
        ``@batch`` and ``execute`` would go on exactly like this.
        """
        try:
            if len(sizes) == 1:
                results = self.batch_results(outputs, sizes[0])
            else:
                split = then(outputs, lambda result: split_outputs(result, sizes, self._model))
                results = self.checked_results(split, len(sizes))
        except BaseException as exc:  # as in execute
            return self.failures(exc, len(sizes))
        return self.responses(results, [Request(source=r) for r in requests] if requests else None)

    def finish_fused(self, pool: dict[str, Any], index: int, result: Any, rows: int) -> list[Any]:
        """The general path from step ``index``'s result, where a specialized fused ``execute`` left off."""
        return self.responses([self.infer_func.resume(pool, index, result, rows)])

    def batch_results(self, outputs: Any, rows: int) -> Any:
        """What ``@batch`` and ``_results`` make of the ``@batch`` function's ``outputs`` for one request."""
        if type(outputs) is dict and all(
            type(v) is np.ndarray and v.ndim and v.shape[0] == rows for v in outputs.values()
        ):
            return [outputs]
        return self.checked_results(then(outputs, lambda result: split_outputs(result, [rows], self._model)), 1)

    def finalize(self) -> None:
        self.close()
        if lingering := lingering_threads():  # said before the process waits on them
            log("log_error", lingering_message(self._model, lingering))

    def close(self) -> None:
        """The callable's own ``finalize`` (or ``close``), then the runtime's; a fused step's, by its pipeline."""
        close = getattr(self.infer_func, "finalize", None) or getattr(self.infer_func, "close", None)
        if callable(close) and not inspect.isclass(self.infer_func):
            close()
        if self._loop is not None:
            self._loop.close()
        if self._concurrent is not None:
            self._concurrent.close()

    # -- per request -------------------------------------------------------------------------------

    def requests(self, requests: list[Any]) -> list[Request]:
        """The server's requests as the callable takes them; host inputs of a GPU instance moved there in one copy."""
        data = [self._request(r) for r in requests]
        if self._arrival is not None:
            self._arrival.move(data)
        return data

    def _request(self, request: Any) -> Request:
        cpu = self._cpu_inputs
        ranks = self._ranks
        data = Request(source=request)  # filled in place: no intermediate dict to copy
        for tensor in request.inputs():
            name = tensor.name()
            array = tensor.as_numpy() if cpu else self._read(tensor)
            if array.ndim < ranks.get(name, 0):
                raise EmptyBatchError(self._model, name)
            data[name] = array
        return data

    # -- rarely taken paths ------------------------------------------------------------------------

    def _empty_batch(self, request: Any) -> EmptyBatchError | None:
        try:
            self._request(request)
        except EmptyBatchError as exc:
            return exc
        return None

    def _execute_apart(self, requests: list[Any]) -> list[Any]:
        """Answer each empty-batch request with its error and serve the others, which may share its batch."""
        errors = [self._empty_batch(r) for r in requests]
        kept = [r for r, error in zip(requests, errors, strict=True) if error is None]
        served = iter((self._execute(kept) if kept else None) or [])
        return [next(served) if error is None else self.failure(error) for error in errors]

    def _run(self, awaitable: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)
