"""Traces without a server (tests/integration/test_tracing_served.py serves them): where the server's command line sends
spans, the parent a callable's span takes, inert spans, and the tracing options serve and deploy write."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from repogen import build_app, traced_span
from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import K8S_FILE
from repogen.errors import UsageError
from repogen.runtime import tracing
from repogen.runtime.request import Request
from repogen.server.running.serve_options import ServeOptions
from repogen.testing.otlp import OtlpReceiver

ROOT = Path(__file__).resolve().parents[3]
TRACE_ID, PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


class _Trace:
    def __init__(self, context: str | None):
        self.context = context

    def get_context(self) -> str | None:
        return self.context


class _ServerRequest:
    """What python_backend hands a model: here only its trace (and no inputs)."""

    def __init__(self, context: str | None):
        self._trace = _Trace(context)

    def trace(self) -> _Trace:
        return self._trace

    def inputs(self) -> list[object]:
        return []


def _traced(flags: str = "01") -> _ServerRequest:
    return _ServerRequest(json.dumps({"traceparent": f"00-{TRACE_ID}-{PARENT}-{flags}"}))


@pytest.fixture
def receiver():
    with OtlpReceiver() as found:
        yield found
    tracing.configure(None)


def test_the_servers_command_line_says_where_spans_go():
    settings = tracing.TraceSettings(["tritonserver", "--trace-config", "mode=opentelemetry", "--trace-config=rate=1",
                                      "--trace-config=opentelemetry,url=http://otel:4318/v1/traces",
                                      "--trace-config", "opentelemetry,resource=service.name=shop"])  # fmt: skip
    assert (settings.opentelemetry, settings.url, settings.resource) == (
        True, "http://otel:4318/v1/traces", {"service.name": "shop"},
    )  # fmt: skip
    assert not tracing.TraceSettings(["tritonserver", "--trace-config=rate=1"]).opentelemetry  # triton's own mode


def test_a_callables_spans_go_under_its_requests_and_each_other(receiver):
    tracing.configure(
        ["tritonserver", "--trace-config=mode=opentelemetry", f"--trace-config=opentelemetry,url={receiver.url}"]
    )
    request = Request({}, source=_traced())
    with request.traced_span("outer"), traced_span(request, "inner", rows=2):
        pass
    with pytest.raises(ValueError), traced_span(request, "failing"):
        raise ValueError("no")
    tracing._exporter().flush()
    spans = {s.name: s for s in receiver.wait_for(lambda spans: len(spans) == 3, timeout=10)}
    assert spans["outer"].parent_id == PARENT and spans["inner"].parent_id == spans["outer"].span_id
    assert {s.trace_id for s in spans.values()} == {TRACE_ID} and spans["inner"].attributes == {"rows": 2}
    assert (spans["failing"].status, spans["outer"].status) == (2, 0)
    assert receiver.posts == ["application/json"]


def test_spans_are_inert_where_nothing_is_traced(receiver):
    tracing.configure(["tritonserver", f"--trace-config=opentelemetry,url={receiver.url}"])  # mode triton
    with traced_span(Request({}, source=_traced()), "off"):
        pass
    tracing.configure(
        ["tritonserver", "--trace-config=mode=opentelemetry", f"--trace-config=opentelemetry,url={receiver.url}"]
    )
    for request in (Request({}), Request({}, source=_ServerRequest(None)), Request({}, source=_traced("00"))):
        with traced_span(request, "not traced"):  # made here; not traced; not sampled
            pass
    with traced_span(None, "nothing served"):
        pass
    if tracing._exporter_of is not None:
        tracing._exporter_of.flush()
    assert receiver.spans == []


def test_serve_and_deploy_turn_tracing_on(tmp_path: Path):
    options = ServeOptions("repo", trace_endpoint="http://127.0.0.1:4318/v1/traces", trace_rate=10)
    assert options.server_arguments([])[-4:] == [
        "--trace-config=mode=opentelemetry", "--trace-config=rate=10", "--trace-config=level=TIMESTAMPS",
        "--trace-config=opentelemetry,url=http://127.0.0.1:4318/v1/traces",
    ]  # fmt: skip
    assert not any("trace" in arg for arg in ServeOptions("repo").server_arguments([]))  # off by default
    with pytest.raises(UsageError, match="--trace-rate samples what --trace-endpoint exports"):
        ServeOptions("repo", trace_rate=5).check()
    with pytest.raises(UsageError, match="trace endpoint 'otel:4318': expected the http"):
        ServeOptions("repo", trace_endpoint="otel:4318").check()
    with pytest.raises(UsageError, match="--trace-endpoint and --trace-config after `--` both"):
        ServeOptions("repo", ("--trace-config=rate=1",), trace_endpoint="http://x:1/v1/traces").check()
    build_app(str(ROOT / "examples" / "quickstart" / "app.py") + ":models", tmp_path / "repo")
    out = generate(tmp_path / "repo", DeployOptions(k8s=True, trace_endpoint="http://otel:4318/v1/traces"))
    deployment = next(d for d in yaml.safe_load_all(out.files[K8S_FILE]) if d["kind"] == "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--trace-config=opentelemetry,url=http://otel:4318/v1/traces" in args and "--trace-config=rate=1000" in args


def test_bls_carries_the_trace_of_the_request_being_served():
    served = _traced()

    def execute(requests):  # as a generated model.py's execute calls the callable, which makes a BLS call
        return tracing.request_trace()

    assert execute([served]) is served.trace()
    assert tracing.request_trace() is None  # no request is being served here

    async def task():  # a callable served apart from execute's frames (an asyncio task)
        tracing.serving_task(served)
        await asyncio.sleep(0)
        return tracing.request_trace()

    async def other_task():
        await asyncio.sleep(0)
        return tracing.served_request()

    async def both():
        return await asyncio.gather(task(), other_task())

    assert asyncio.run(both()) == [served.trace(), None]  # each task its own: the other sees none
    assert tracing.served_request() is None  # nor the thread that ran them


def test_where_spans_go_is_read_off_the_servers_command_line_when_a_span_first_needs_it(monkeypatch):
    """runtime/tracing.py is carried only by models that can open spans, so it reads the server's --trace-config
    itself (the stub's command line names the server's pid) rather than being handed it at every model's load."""
    from repogen.runtime import contract

    server = ["tritonserver", "--trace-config", "mode=opentelemetry", "--trace-config=opentelemetry,url=http://otel:1"]
    lines = {"/proc/self/cmdline": ["/opt/triton_python_backend_stub", "model.py", "region", "1", "2", "4242"],
             "/proc/4242/cmdline": server}  # fmt: skip
    monkeypatch.setattr(contract, "read_argv", lambda cmdline="/proc/self/cmdline": lines.get(cmdline))
    monkeypatch.setattr(tracing, "_settings", None)
    assert (tracing.settings().opentelemetry, tracing.settings().url) == (True, "http://otel:1")
    monkeypatch.setattr(tracing, "_settings", None)
    monkeypatch.setattr(contract, "read_argv", lambda cmdline="/proc/self/cmdline": None)  # outside a stub: no server
    assert tracing.settings().opentelemetry is False
    with traced_span(Request({}, source=_traced()), "inert"):  # a traced request, but no server exports spans
        pass
