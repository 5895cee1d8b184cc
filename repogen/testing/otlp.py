"""An OTLP/HTTP trace receiver for tests: what tritonserver and the runtime's ``traced_span`` export, decoded with
OpenTelemetry's own protobuf messages (opentelemetry-proto, a test dependency).

tritonserver (its opentelemetry-cpp exporter) posts JSON (``application/json``: OTLP's JSON, ids in hex), as the
runtime does; protobuf (``application/x-protobuf``) is read too.
"""

from __future__ import annotations

import base64
import gzip
import http.server
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["OtlpReceiver", "ReceivedSpan"]

_IDS = ("traceId", "spanId", "parentSpanId")


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    """The parent's span id in hex; "" for a root."""
    scope: str
    attributes: dict[str, Any] = field(default_factory=dict)
    status: int = 0
    """OTLP's status code: 0 unset, 1 ok, 2 error."""


def _decoded(body: bytes, content_type: str) -> Any:
    """An ``ExportTraceServiceRequest`` of one POST's body."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    message = trace_service_pb2.ExportTraceServiceRequest()
    if content_type.startswith("application/json"):
        data = json.loads(body)
        for resource in data.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in _IDS:  # OTLP/JSON writes ids in hex, protobuf's JSON mapping wants base64
                        if span.get(key):
                            span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    else:
        message.ParseFromString(body)
    return message


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """Listens on 127.0.0.1 (:attr:`url`) until :meth:`close`; :attr:`spans` is every span received, in order."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.posts: list[str] = []
        """Each POST's content type, in order."""
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                content_type = self.headers.get("Content-Type", "")
                receiver._add(_decoded(body, content_type), content_type)
                self.send_response(200)
                self.send_header("Content-Type", content_type or "application/json")
                self.end_headers()
                self.wfile.write(b"{}" if "json" in content_type else b"")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"

    def _add(self, message: Any, content_type: str) -> None:
        found = []
        for resource in message.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    found.append(ReceivedSpan(span.name, span.trace_id.hex(), span.span_id.hex(),
                                              span.parent_span_id.hex(), scope.scope.name, attributes,
                                              span.status.code))  # fmt: skip
        with self._lock:
            self.spans.extend(found)
            self.posts.append(content_type)

    def wait_for(self, ready: Callable[[list[ReceivedSpan]], bool], timeout: float = 60.0) -> list[ReceivedSpan]:
        """The spans once ``ready(spans)`` holds (tritonserver exports in batches, every few seconds); an
        AssertionError listing what came when it does not within ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                spans = list(self.spans)
            if ready(spans):
                return spans
            if time.monotonic() > deadline:
                raise AssertionError(f"spans received in {timeout:.0f} s: {spans}")
            time.sleep(0.2)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> OtlpReceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
