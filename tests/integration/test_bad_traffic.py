"""Bad traffic gets a clear client error over HTTP and gRPC, and the model keeps serving.

Who answers each malformed request, measured on tritonserver 2.39.0, 2.41.0 and 2.51.0 (the
``calls`` counter each traffic model returns shows whether its callable ran; a runtime answer is
prefixed with the exception type):

| request                                  | 2.39.0 / 2.41.0                          | 2.51.0               |
|------------------------------------------|------------------------------------------|----------------------|
| wrong dtype (FP64 for FP32)              | tritonserver                             | tritonserver         |
| BYTES sent to a numeric input            | tritonserver                             | tritonserver         |
| wrong shape ([1,3] for [-1,2])           | tritonserver                             | tritonserver         |
| missing input                            | tritonserver                             | tritonserver         |
| unknown input (count exceeds inputs)     | tritonserver                             | tritonserver         |
| unknown input (count fits, optional)     | tritonserver                             | tritonserver         |
| batch over max_batch_size                | tritonserver                             | tritonserver         |
| non-batching model, wrong rank           | tritonserver                             | tritonserver         |
| empty batch (batch dim 0), numeric input | repogen runtime: EmptyBatchError (*)     | tritonserver         |
| empty batch, BYTES input                 | Python backend stub, before execute (**) | tritonserver         |
| zero-length non-batch dim (shape [0])    | served normally: a valid, empty tensor   | same                 |

(*) 2.39/2.41 pass a batch-0 request on without its batch dimension, over one row of
uninitialized memory; the runtime detects the missing dimension and refuses that request alone
(others batched with it are served). No other Python-side validation is added: tritonserver
already names the input, the model and what it expected.
(**) "ValueError: cannot reshape array of size 0 into shape (1,)" from the stub's deserializer,
for every request of that execute(); repogen code never runs, so nothing to fix on our side.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer
from repogen.testing.server_under_test import release_at_least

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

F32 = np.float32
EMPTY_BATCH_BY_TRITON = "input byte size mismatch for input 'x' for model 'Batched'. Expected 8, got 0"
EMPTY_BATCH_BY_RUNTIME = (
    "EmptyBatchError [INVALID_ARG]: model 'Batched' input 'x': the request has an empty batch (batch size 0); "
    "send at least one row"
)


def empty_batch_refusal(model: str) -> str:
    """What refuses an empty batch of ``model`` on the release under test, and only there (the table above)."""
    if release_at_least("2.51.0"):
        return f"input byte size mismatch for input 'x' for model '{model}'. Expected 8, got 0"
    return f"model '{model}' input 'x': the request has an empty batch (batch size 0); send at least one row"


@dataclass(frozen=True)
class BadRequest:
    """One malformed request and the exact text its client must see (the same on every release unless noted)."""

    model: str
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    message: str = ""


BAD_REQUESTS = {
    "wrong-dtype": BadRequest(
        "Batched",
        {"x": np.ones((1, 2), np.float64)},
        "inference input 'x' data-type is 'FP64', but model 'Batched' expects 'FP32'",
    ),
    "bytes-to-numeric": BadRequest(
        "Batched",
        {"x": np.array([[b"1", b"2"]], dtype=object)},
        "inference input 'x' data-type is 'BYTES', but model 'Batched' expects 'FP32'",
    ),
    "wrong-shape": BadRequest(
        "Batched",
        {"x": np.ones((1, 3), F32)},
        "unexpected shape for input 'x' for model 'Batched'. Expected [-1,2], got [1,3]",
    ),
    "missing-input": BadRequest("Batched", {}, "expected 1 inputs but got 0 inputs for model 'Batched'"),
    "unknown-input": BadRequest(
        "Batched",
        {"x": np.ones((1, 2), F32), "z": np.ones((1, 2), F32)},
        "expected 1 inputs but got 2 inputs for model 'Batched'",
    ),
    "unknown-input-beside-optional": BadRequest(
        "Scaled",
        {"x": np.ones((2,), F32), "z": np.ones((1,), F32)},
        "unexpected inference input 'z' for model 'Scaled'",
    ),
    "over-max-batch-size": BadRequest(
        "Batched", {"x": np.ones((9, 2), F32)}, "inference request batch-size must be <= 8 for 'Batched'"
    ),
    "non-batching-wrong-rank": BadRequest(
        "Unbatched",
        {"x": np.ones((1, 2), F32)},
        "unexpected shape for input 'x' for model 'Unbatched'. Expected [2], got [1,2]",
    ),
    "empty-batch": BadRequest(
        "Batched",
        {"x": np.ones((0, 2), F32)},
        EMPTY_BATCH_BY_TRITON if release_at_least("2.51.0") else EMPTY_BATCH_BY_RUNTIME,
    ),
}

GOOD_INPUTS = {
    "Batched": {"x": np.array([[1.0, 2.0]], F32)},
    "Gathered": {"x": np.array([[1.0, 2.0]], F32)},
    "Unbatched": {"x": np.array([1.0, 2.0], F32)},
    "Scaled": {"x": np.array([1.0, 2.0], F32)},
}


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("traffic") / "repo"
    cli_build("tests/apps/traffic/app.py:models", repo)
    return serve(repo)


def calls_so_far(protocol: str, server, model: str) -> int:
    """Run one good request and return how many times the model's callable has run, this one included."""
    out = infer(protocol, server, model, GOOD_INPUTS[model])
    return int(out["calls"].ravel()[0])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", list(BAD_REQUESTS.values()), ids=list(BAD_REQUESTS))
def test_bad_request_is_refused_clearly_and_the_model_keeps_serving(server, protocol, case):
    before = calls_so_far(protocol, server, case.model)
    with pytest.raises(InferenceServerException) as refused:
        infer(protocol, server, case.model, case.inputs)
    assert case.message in str(refused.value)
    # The callable never ran for the bad request: the next good one is exactly the next call.
    assert calls_so_far(protocol, server, case.model) == before + 1
    assert server.model_ready(case.model)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_zero_length_dimension_is_a_valid_request(server, protocol):
    out = infer(protocol, server, "Scaled", {"x": np.ones((0,), F32), "scale": np.array([3.0], F32)})
    assert out["y"].shape == (0,) and out["y"].dtype == F32


def test_empty_batch_does_not_fail_the_requests_batched_with_it(server):
    """On 2.39/2.41 the empty request reaches execute() beside good ones; only it is refused."""
    good = [np.full((1, 2), i, F32) for i in range(4)]
    requests = [{"x": np.ones((0, 2), F32)}] + [{"x": x} for x in good]

    def send(inputs: dict[str, np.ndarray]) -> object:
        try:
            return infer("grpc", server, "Gathered", inputs)
        except InferenceServerException as exc:
            return exc

    with ThreadPoolExecutor(len(requests)) as pool:
        empty, *answers = pool.map(send, requests)
    assert isinstance(empty, InferenceServerException)
    assert empty_batch_refusal("Gathered") in str(empty)
    for x, out in zip(good, answers, strict=True):
        assert isinstance(out, dict), out
        np.testing.assert_array_equal(out["y"], x * 2)


def test_empty_batch_in_a_stream_ends_only_its_own_stream(server):
    """Decoupled and batched: the empty request's stream ends with an error, the others stream on."""
    events: queue.Queue[object] = queue.Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    client.start_stream(callback=lambda result, error: events.put(error if error else result))
    try:
        for request_id, x in (
            ("empty", np.ones((0, 2), F32)),
            ("a", np.full((1, 2), 1, F32)),
            ("b", np.full((1, 2), 2, F32)),
        ):
            tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            client.async_stream_infer("Streamed", [tensor], request_id=request_id)
        errors, streamed = [], {"a": [], "b": []}
        while len(errors) < 1 or sum(map(len, streamed.values())) < 4:
            event = events.get(timeout=30)
            if isinstance(event, InferenceServerException):
                errors.append(str(event))
            else:
                streamed[event.get_response().id].append(event.as_numpy("y").tolist())
    finally:
        client.stop_stream()
        client.close()
    assert len(errors) == 1 and empty_batch_refusal("Streamed") in errors[0], errors
    assert streamed == {"a": [[[1.0, 1.0]], [[2.0, 2.0]]], "b": [[[2.0, 2.0]], [[4.0, 4.0]]]}
