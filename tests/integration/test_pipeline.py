"""The pipeline example end to end as an ensemble and as BLS, served by tritonserver: its answers against a numpy
reference written here from the example's tables (never through repogen), the in-process run against the server;
streaming and async BLS."""

from __future__ import annotations

import queue

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from pipeline_reference import reference

from repogen.loader import load_app
from repogen.testing.answers import assert_answers_match
from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration

TEXTS = np.array([[b"a good day"], [b"this is really an awful movie"], [b"meh"], [b"great"]], dtype=object)


def test_the_reference_reads_the_example_as_its_docstring_says():
    """Literal answers: short texts go to the keyword classifier in the BLS model only."""
    assert reference("RoutedPipeline", TEXTS)["label"][2:, 0].tolist() == [b"neutral", b"positive"]
    assert reference("Pipeline", TEXTS)["label"].dtype == object


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["Pipeline", "RoutedPipeline", "BothClassifiers"])
def test_served_answers_equal_the_numpyreference(server, protocol, model):
    served = infer(protocol, server, model, {"text": TEXTS})
    expected = reference(model, TEXTS)
    assert_answers_match(served, expected, f"{model} over {protocol}")


@pytest.fixture(scope="module")
def local():
    return load_app("examples/pipeline/app.py:models").repository.local()


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("pipeline") / "repo"
    cli_build("examples/pipeline/app.py:models", repo)
    return serve(repo)


def test_all_ready_including_the_ensemble(server):
    states = {m["name"]: m.get("state") for m in server.models_status()}
    assert states["Pipeline"] == "READY"
    assert set(states.values()) == {"READY"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("model", ["Pipeline", "RoutedPipeline", "BothClassifiers"])
def test_the_in_process_run_answers_as_the_server(server, local, protocol, model):
    """The in-process runner's own test: it is checked against the server (the reference checks the server)."""
    served = infer(protocol, server, model, {"text": TEXTS})
    expected = local.infer(model, {"text": TEXTS})
    assert_answers_match(served, expected, f"{model} over {protocol}, against the in-process run")


def test_ensemble_and_bls_route_differently_on_short_texts(local):
    ensemble = local.infer("Pipeline", {"text": TEXTS})["label"][:, 0].tolist()
    routed = local.infer("RoutedPipeline", {"text": TEXTS})["label"][:, 0].tolist()
    assert routed[:2] == ensemble[:2]  # long texts: same three models
    assert routed[3] == b"positive"  # "great" is short: the keyword classifier decides


def test_streaming_bls_restreams_in_order(server, local):
    events: queue.Queue[object] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: events.put(error or result))
    tensor = grpcclient.InferInput("text", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([b"one two three"], dtype=object))
    client.async_stream_infer("Ticker", [tensor], enable_empty_final_response=True)
    chunks = []
    while True:
        result = events.get(timeout=30)
        assert not isinstance(result, Exception), result
        response = result.get_response()
        if response.outputs:
            chunks.append((result.as_numpy("word")[0], int(result.as_numpy("seen")[0])))
        if response.parameters["triton_final_response"].bool_param:
            break
    client.stop_stream()
    client.close()
    assert chunks == [(b"ONE", 1), (b"TWO", 2), (b"THREE", 3)]
    expected = [
        (c["word"][0], int(c["seen"][0]))
        for c in local.stream("Ticker", {"text": np.array([b"one two three"], dtype=object)})
    ]
    assert chunks == expected


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bls_aggregates_a_stream(server, protocol):
    out = infer(protocol, server, "WordCount", {"text": np.array([b"a b c d"], dtype=object)})
    assert out["words"].tolist() == [4]
