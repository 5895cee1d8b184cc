"""PyTriton's features, and Triton's beyond them, on the real server: instances, class models with files and
labels, async and streaming callables, request parameters and forwarded headers, version policies."""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer
from repogen.testing.server_under_test import requires_release

pytestmark = pytest.mark.integration

SERVER_ARGS = (
    "--http-header-forward-pattern=x-repogen-.*",
    "--grpc-header-forward-pattern=x-repogen-.*",
    "--cache-config=local,size=1048576",
    "--rate-limit=execution_count",
)


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("parity") / "repo"
    cli_build("tests/apps/parity/app.py:models", repo)
    return serve(repo, extra_args=SERVER_ARGS)


def _stub_models(server) -> list[str]:
    """The model path of every python backend stub process the server runs."""
    models = []
    for pid in server.process_group_pids():
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if args and args[0].endswith(b"triton_python_backend_stub"):
            models.append(args[1].decode())
    return models


def test_infer_func_list_runs_one_stub_process_per_instance(server):
    twins = [m for m in _stub_models(server) if "/Twins/" in m]
    assert len(twins) == 2
    x = np.array([1.0], dtype=np.float32)
    with ThreadPoolExecutor(6) as pool:
        outs = list(pool.map(lambda _: infer("http", server, "Twins", {"x": x}), range(6)))
    assert {int(o["instance"][0]) for o in outs} == {0, 1}
    assert len({int(o["pid"][0]) for o in outs}) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_class_model_loads_shipped_weights(server, protocol):
    x = np.array([[1, 1, 1, 0], [0, 0, 0, 2]], dtype=np.float32)
    out = infer(protocol, server, "Linear", {"x": x})
    np.testing.assert_array_equal(out["scores"], [[1, 2, 3], [2, 2, 2]])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_labels_with_class_count(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)
    tensor = module.InferInput("x", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.array([[1, 1, 1, 0]], dtype=np.float32))
    result = client.infer("Linear", [tensor], outputs=[module.InferRequestedOutput("scores", class_count=2)])
    top = [v.decode() if isinstance(v, bytes) else v for v in result.as_numpy("scores").ravel()]
    assert top == ["3.000000:2:emu", "2.000000:1:dog"]
    client.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_async_callable(server, protocol):
    out = infer(protocol, server, "Slow", {"x": np.array([[1.0, 2.0]], dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], [[2.0, 3.0]])


def _stream(server, n: int) -> list[object]:
    events: queue.Queue[object] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: events.put(error if error else result))
    tensor = grpcclient.InferInput("n", [1], "INT32")
    tensor.set_data_from_numpy(np.array([n], dtype=np.int32))
    client.async_stream_infer("Countdown", [tensor], enable_empty_final_response=True)
    received = []
    while True:
        event = events.get(timeout=30)
        if isinstance(event, InferenceServerException):
            received.append(event)
            break
        response = event.get_response()
        if response.outputs:
            received.append(int(event.as_numpy("tick")[0]))
        if response.parameters["triton_final_response"].bool_param:
            break
    client.stop_stream()
    client.close()
    return received


def test_generator_streams_every_chunk_in_order_then_completes(server):
    assert _stream(server, 4) == [4, 3, 2, 1]


def test_error_mid_stream_reaches_the_client(server):
    received = _stream(server, 15)
    assert received[:2] == [15, 14]
    assert "RuntimeError: unlucky 13" in str(received[-1])
    assert _stream(server, 2) == [2, 1]  # the model keeps serving


@requires_release("2.51.0", "its FP64 parameter (temperature=0.5) is refused by the 2.39/2.41 frontends")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_parameters_and_forwarded_headers_reach_the_callable(server, protocol):
    out = infer(
        protocol,
        server,
        "Echo",
        {"x": np.array([0.0], dtype=np.float32)},
        parameters={"temperature": 0.5, "mode": "fast"},
        headers={"x-repogen-user": "bob", "x-other": "dropped"},
    )
    text = out["parameters"][0].decode()
    assert '"mode": "fast"' in text and '"temperature": 0.5' in text
    assert '"x-repogen-user": "bob"' in text and "x-other" not in text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_version_policies(server, protocol):
    x = {"x": np.array([0.0], dtype=np.float32)}
    for version in ("1", "2"):
        assert infer(protocol, server, "AllVersions", x, model_version=version)["version"][0] == int(version)
    assert infer(protocol, server, "LatestOnly", x)["version"][0] == 2
    with pytest.raises(InferenceServerException):
        infer(protocol, server, "LatestOnly", x, model_version="1")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sequence_batching_keeps_state_per_correlation_id(server, protocol):
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(server.http_url if protocol == "http" else server.grpc_url)

    def send(sequence: int, value: float, start: bool = False, end: bool = False) -> float:
        tensor = module.InferInput("x", [1, 1], "FP32")
        tensor.set_data_from_numpy(np.array([[value]], dtype=np.float32))
        result = client.infer("Accumulator", [tensor], sequence_id=sequence, sequence_start=start, sequence_end=end)
        return float(result.as_numpy("total")[0, 0])

    base = 1000 if protocol == "http" else 2000
    assert send(base + 1, 1.0, start=True) == 1.0
    assert send(base + 2, 10.0, start=True) == 10.0
    assert send(base + 1, 2.0) == 3.0
    assert send(base + 2, 20.0) == 30.0
    assert send(base + 1, 3.0, end=True) == 6.0
    assert send(base + 2, 30.0, end=True) == 60.0
    assert send(base + 1, 5.0, start=True, end=True) == 5.0  # a new sequence starts from zero
    client.close()


def test_warmup_runs_before_ready(server):
    out = infer("grpc", server, "Warmed", {"x": np.zeros((1, 2), dtype=np.float32)})
    assert out["calls"][0, 0] == 4  # three warmup requests, then ours


def test_response_cache_answers_repeated_requests(server):
    x = {"x": np.array([42.0], dtype=np.float32)}
    first = infer("http", server, "Cached", x)["calls"][0]
    assert infer("grpc", server, "Cached", x)["calls"][0] == first  # served from the cache
    assert infer("http", server, "Cached", {"x": np.array([7.0], dtype=np.float32)})["calls"][0] == first + 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reshape_to_scalar_and_rate_limited_instance(server, protocol):
    out = infer(protocol, server, "Scalar", {"x": np.ones((3, 1), dtype=np.float32)})
    assert out["ndim"].tolist() == [[1], [1], [1]]  # each sample arrives as a scalar: a batch of shape (3,)
