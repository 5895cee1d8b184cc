"""OpenTelemetry traces across models: BLS calls carry the caller's trace, and callables open spans of their own.

tritonserver traces a sampled request with OpenTelemetry when started with ``--trace-config mode=opentelemetry``
(``repogen serve --trace-endpoint``, ``repogen deploy --trace-endpoint``, ``TritonConfig(trace_config=[...])``): a
span per model it runs, an ensemble's steps under the ensemble's, exported over OTLP/HTTP to
``--trace-config opentelemetry,url=...``. Two things it cannot do by itself, done here:

* A BLS request is traced as the caller's child only when made with ``trace=request.trace()`` (python_backend
  r23.10+): :func:`request_trace` is that trace, for the request being served (:func:`served_request`).
* A callable's own spans (PyTriton 0.7's ``traced_span(request, name)``): the request's context
  (``request.trace().get_context()``, python_backend r24.04+: W3C ``traceparent``) is the parent of a span this
  process makes and exports, OTLP/HTTP with JSON encoding (the standard library's ``urllib``, no OpenTelemetry SDK
  in the server), to the endpoint the server exports to, read off its command line. Where the request is not
  traced (tracing off, a request not sampled, an older release) ``traced_span`` does nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["TraceSettings", "request_trace", "served_request", "serving_task", "traced_span"]

TRACE_FLAG = "--trace-config"
EXPORT_EVERY_S = 1.0
"""A batch of spans leaves at least this often (and at exit)."""
EXPORT_TIMEOUT_S = 5.0
MAX_QUEUED = 4096
"""Spans waiting for export past this are dropped (a receiver that does not answer must not grow the stub)."""

_serving: contextvars.ContextVar[Any] = contextvars.ContextVar("repogen_serving", default=None)
_span: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("repogen_span", default=None)


def serving_task(request: Any) -> None:
    """For the rest of the running asyncio task, ``request`` is the one being served (its BLS calls carry its
    trace): a task's stack has no ``execute`` frame for :func:`served_request` to find. A task runs in a copy of
    the context it was made in, so what is set here ends with the task and is seen by no other."""
    _serving.set(request)


# The functions that serve requests, and the local naming them: execute(self, requests) of the runtime and of
# generated model.py files (and their _execute_many), decoupled.execute(model, requests, ...), serve_one(model, request)
_SERVING_FRAMES = {"execute": "requests", "_execute": "requests", "_execute_many": "requests", "serve_one": "request"}


def served_request() -> Any:
    """The server's request being served (the first of a batch), found on the stack when this is called.

    Found there rather than recorded by ``execute``: recording it (a context variable holding the request until
    the next ``execute``) cost the straight line 10,000-15,000 more stub instructions per request (callgrind, 16
    floats: 210-216 k against 197-202 k without it); a lookup here costs only a BLS call or a traced span.
    """
    request = _serving.get()
    if request is not None:
        return request
    frame = sys._getframe(1)
    while frame is not None:
        name = _SERVING_FRAMES.get(frame.f_code.co_name)
        found = frame.f_locals.get(name) if name is not None else None
        if name == "requests" and isinstance(found, list) and found and hasattr(found[0], "inputs"):
            return found[0]
        if name == "request" and hasattr(found, "inputs"):
            return found
        frame = frame.f_back  # type: ignore[assignment]
    return None


def request_trace() -> Any:
    """The trace of the request being served, for ``InferenceRequest(trace=...)``; None where there is none."""
    trace = getattr(served_request(), "trace", None)
    if trace is None:
        return None
    try:
        return trace()
    except Exception:  # a request already answered, a release without traces
        return None


class TraceSettings:
    """Where the server exports its OpenTelemetry spans (its ``--trace-config``), read once per process."""

    def __init__(self, argv: Sequence[str] | None):
        settings: dict[str, str] = {}
        resource: dict[str, str] = {}
        args = list(argv or ())
        for index, arg in enumerate(args):
            value = arg[len(TRACE_FLAG) + 1 :] if arg.startswith(TRACE_FLAG + "=") else None
            if arg == TRACE_FLAG and index + 1 < len(args):
                value = args[index + 1]
            if value is None:
                continue
            moded = value.startswith(("opentelemetry,", "triton,"))
            mode, _, setting = value.partition(",") if moded else ("", "", value)
            key, _, item = setting.partition("=")
            if mode == "opentelemetry" and key == "resource":
                name, _, attribute = item.partition("=")
                resource[name] = attribute
            elif mode in ("", "opentelemetry"):
                settings[key] = item
        self.mode = settings.get("mode", "triton")
        self.url = settings.get("url", "http://localhost:4318/v1/traces")
        self.resource = {"service.name": "triton-inference-server", **resource}

    @property
    def opentelemetry(self) -> bool:
        return self.mode == "opentelemetry"


_settings: TraceSettings | None = None


def configure(server_argv: Sequence[str] | None) -> TraceSettings:
    """Read where spans go from the server's command line ``server_argv``."""
    global _settings
    _settings = TraceSettings(server_argv)
    return _settings


def settings() -> TraceSettings:
    """Where spans go: read from the server's command line when a traced request first opens a span.

    Read here, not at load, so that only a model that can open spans carries this module (emit/vendoring.py);
    outside a backend stub (``repogen.local``, a fused step run in-process) there is no server, and no span.
    """
    if _settings is None:
        from .contract import parse, read_argv

        stub = parse(read_argv())
        configure(read_argv(f"/proc/{stub.server_pid}/cmdline") if stub is not None else None)
    assert _settings is not None
    return _settings


@contextlib.contextmanager
def traced_span(request: Any, span_name: str, **attributes: Any) -> Iterator[None]:
    """A span named ``span_name`` around the block, a child of ``request``'s span (or of the enclosing
    ``traced_span``), where the request is traced; otherwise nothing. PyTriton 0.7's name and arguments
    (``request``: the callable's request; None, in a ``@batch`` function, the first request of the batch);
    ``attributes`` become the span's, as strings, numbers or booleans. An exception leaving the block marks the
    span as an error, and goes on."""
    parent = _span.get() or _parent_of(request if request is not None else served_request())
    if parent is None or not settings().opentelemetry:
        yield
        return
    trace_id, parent_id = parent
    span_id = os.urandom(8).hex()
    token = _span.set((trace_id, span_id))
    start = time.time_ns()
    error: BaseException | None = None
    try:
        yield
    except BaseException as exc:
        error = exc
        raise
    finally:
        _span.reset(token)
        _exporter().add(_span_json(span_name, trace_id, span_id, parent_id, start, time.time_ns(), attributes, error))


def _parent_of(request: Any) -> tuple[str, str] | None:
    """(trace id, span id) of the server's span of ``request`` (a repogen ``Request`` or the server's own)."""
    source = getattr(request, "_source", None) or request  # a Request made of a server's request, or that one
    trace = getattr(source, "trace", None)
    try:
        context = trace().get_context() if trace is not None else None  # r24.04+; None where not traced
    except Exception:
        return None
    if not context:
        return None
    try:
        parent = json.loads(context).get("traceparent", "")
    except (ValueError, AttributeError):
        return None
    parts = parent.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16 or int(parts[3], 16) & 1 == 0:
        return None  # not W3C's, or not sampled
    return parts[1], parts[2]


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _span_json(
    name: str, trace_id: str, span_id: str, parent_id: str, start: int, end: int, attributes: dict[str, Any],
    error: BaseException | None,
) -> dict[str, Any]:  # fmt: skip
    """One span as OTLP/JSON writes it (ids in hex, times as strings of nanoseconds)."""
    span: dict[str, Any] = {
        "traceId": trace_id, "spanId": span_id, "parentSpanId": parent_id, "name": name, "kind": 1,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
        "attributes": [{"key": str(k), "value": _value(v)} for k, v in sorted(attributes.items())],
    }  # fmt: skip
    if error is not None:
        span["status"] = {"code": 2, "message": f"{type(error).__name__}: {error}"}
    return span


class _Exporter:
    """Spans queued, sent in batches by a daemon thread (at most every :data:`EXPORT_EVERY_S`), the rest at exit."""

    def __init__(self, settings: TraceSettings):
        self.settings = settings
        self.spans: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED)
        self.dropped = 0
        self.thread = threading.Thread(target=self._run, name="repogen-spans", daemon=True)
        self.thread.start()
        atexit.register(self.flush)

    def add(self, span: dict[str, Any]) -> None:
        try:
            self.spans.put_nowait(span)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            time.sleep(EXPORT_EVERY_S)
            self.flush()

    def flush(self) -> None:
        batch = []
        with contextlib.suppress(queue.Empty):
            while True:
                batch.append(self.spans.get_nowait())
        if batch:
            self._send(batch)

    def _send(self, spans: list[dict[str, Any]]) -> None:
        import urllib.request  # only where spans are exported: every model imports this module

        resource = [{"key": k, "value": {"stringValue": v}} for k, v in sorted(self.settings.resource.items())]
        body = {"resourceSpans": [{"resource": {"attributes": resource},
                                   "scopeSpans": [{"scope": {"name": "repogen"}, "spans": spans}]}]}  # fmt: skip
        request = urllib.request.Request(
            self.settings.url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=EXPORT_TIMEOUT_S) as response:
                response.read()
        except Exception as exc:  # a receiver that is down loses these spans, never a request
            from .failures import log  # the server's log; imported only inside the server

            log("log_warn", f"{len(spans)} span(s) of traced_span could not reach {self.settings.url}: {exc}")


_exporter_of: _Exporter | None = None
_exporter_lock = threading.Lock()


def _exporter() -> _Exporter:
    global _exporter_of
    if _exporter_of is None:
        with _exporter_lock:
            if _exporter_of is None:
                _exporter_of = _Exporter(settings())
    return _exporter_of
