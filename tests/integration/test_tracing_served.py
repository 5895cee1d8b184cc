"""Traces across models on the real server (tests/apps/traces/app.py), received by an OTLP/HTTP receiver in this
process and decoded with OpenTelemetry's protobuf messages (repogen.testing.otlp).

``repogen serve --trace-endpoint URL --trace-rate 1``: an ensemble's steps, a BLS pipeline's called models and the
callables' own spans (``traced_span``, where the release gives a request's context: python_backend r24.04+) share
one trace id, each under the span it belongs to. Without tracing the same callables answer the same, their spans
inert; ``Triton.run()`` traces with PyTriton's ``TritonConfig(trace_config=[...])``.
"""

from __future__ import annotations

import numpy as np
import pytest

from repogen import ModelConfig, Tensor, Triton, TritonConfig, batch, traced_span
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.otlp import OtlpReceiver, ReceivedSpan
from repogen.testing.server_under_test import release_at_least
from repogen.triton.python_backend import TRACE_CONTEXT_FROM

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

APP = "tests/apps/traces/app.py:models"
X = {"x": np.array([[1.0]], dtype=np.float32)}
OWN_SPANS = release_at_least(TRACE_CONTEXT_FROM)
"""Whether the release gives a callable its request's trace context (else traced_span does nothing)."""


@pytest.fixture(scope="module")
def repo(cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("traces") / "repo"
    cli_build(APP, repository)
    return repository


@pytest.fixture(scope="module")
def receiver():
    with OtlpReceiver() as found:
        yield found


@pytest.fixture(scope="module", autouse=True)
def quick_export():
    """tritonserver exports its spans every 5 s (OpenTelemetry's batch processor): every 0.2 s here (2.51 reads it)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")
        yield


@pytest.fixture(scope="module")
def traced(triton_install, repo, receiver):
    with triton_install.serving(repo, trace_endpoint=receiver.url, trace_rate=1) as serving:
        yield serving.server


def one_trace(receiver: OtlpReceiver, root: str, names: set[str]) -> dict[str, list[ReceivedSpan]]:
    """The spans of the one trace whose model span is ``root``, by name, once every one of ``names`` is there."""

    def spans_of(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
        roots = [s for s in spans if s.name == root and s.scope != "repogen"]
        return [s for s in spans if roots and s.trace_id == roots[0].trace_id]

    found = spans_of(receiver.wait_for(lambda spans: names <= {s.name for s in spans_of(spans)}))
    by_name: dict[str, list[ReceivedSpan]] = {}
    for span in found:
        by_name.setdefault(span.name, []).append(span)
    return by_name


def test_an_ensembles_steps_share_its_trace(traced, receiver):
    assert infer("http", traced, "Pipeline", X)["z"].tolist() == [[3.0]]
    wanted = {"InferRequest", "Pipeline", "Double", "Inc", *(["inc-body"] if OWN_SPANS else [])}
    spans = one_trace(receiver, "Pipeline", wanted)
    (request,), (pipeline,) = spans["InferRequest"], spans["Pipeline"]
    assert pipeline.parent_id == request.span_id
    (step1,), (step2,) = spans["Double"], spans["Inc"]
    assert step1.parent_id == step2.parent_id == pipeline.span_id
    if OWN_SPANS:
        (body,) = spans["inc-body"]
        assert (body.parent_id, body.scope, body.attributes) == (step2.span_id, "repogen", {"rows": 1})


def test_a_bls_pipelines_called_models_and_the_callables_spans_share_its_trace(traced, receiver):
    assert infer("grpc", traced, "Caller", X)["z"].tolist() == [[3.0]]
    own = {"caller-step", "caller-inc", "inc-body"} if OWN_SPANS else set()
    spans = one_trace(receiver, "Caller", {"Caller", "Double", "Inc", *own})
    (caller,) = spans["Caller"]
    (called_double,), (called_inc,) = spans["Double"], spans["Inc"]
    assert called_double.parent_id == called_inc.parent_id == caller.span_id  # BLS calls carry the caller's trace
    if OWN_SPANS:
        (step,), (then,), (body,) = spans["caller-step"], spans["caller-inc"], spans["inc-body"]
        assert step.parent_id == then.parent_id == caller.span_id
        assert step.attributes == {"kind": "bls"} and body.parent_id == called_inc.span_id
    else:
        assert not own & set(spans)


def test_without_tracing_the_spans_do_nothing(serve, repo):
    server = serve(repo)  # started with no --trace-config
    for protocol in PROTOCOLS:
        assert infer(protocol, server, "Caller", X)["z"].tolist() == [[3.0]]
        assert infer(protocol, server, "Pipeline", X)["z"].tolist() == [[3.0]]
    assert "could not reach" not in server.log_path.read_text(errors="replace")


def test_triton_run_traces_with_pytritons_trace_config(triton_install):
    with OtlpReceiver() as receiver:
        config = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, trace_config=[
            "mode=opentelemetry", f"opentelemetry,url={receiver.url}", "rate=1", "level=TIMESTAMPS",
        ])  # fmt: skip
        triton = Triton(config=config, triton_release=triton_install.install.release.tritonserver,
                        server_python=triton_install.venv.python_version)  # fmt: skip

        @batch
        def scale(x):
            with traced_span(None, "scale-body"):
                return {"y": x * 3}

        triton.bind(
            "Scale",
            scale,
            inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
            outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
            config=ModelConfig(max_batch_size=4),
        )
        with triton:
            triton.run()
            server = triton._served.serving.server  # type: ignore[union-attr]
            assert infer("http", server, "Scale", X)["y"].tolist() == [[3.0]]
            spans = one_trace(receiver, "Scale", {"Scale", *(["scale-body"] if OWN_SPANS else [])})
        if OWN_SPANS:
            assert spans["scale-body"][0].parent_id == spans["Scale"][0].span_id
