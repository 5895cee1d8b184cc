"""BLS calls with what a request carries (tests/apps/bls_options): a sequence's id and flags, parameters, a model
version and a timeout, from sync, async and streaming callers; and a called model's error codes on the caller's
``ModelCallError``.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, expected_status, infer, stream
from repogen.testing.server_under_test import release_at_least

pytestmark = [pytest.mark.integration]

CLIENTS = 4


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repository = tmp_path_factory.mktemp("bls_options") / "repo"
    cli_build("tests/apps/bls_options/app.py:models", repository)
    return serve(repository)


@pytest.mark.parametrize("model", ["Driver", "DriverSync"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_four_clients_at_once_each_drive_their_own_five_step_sequence(server, protocol, model):
    rng = np.random.default_rng(59)
    values = [rng.integers(1, 100, 5).astype(np.float32) for _ in range(CLIENTS)]
    start = threading.Barrier(CLIENTS)

    def client(i: int) -> np.ndarray:
        start.wait()
        cid = np.array([1000 + 10 * i + PROTOCOLS.index(protocol)], np.uint64)
        return infer(protocol, server, model, {"x": values[i], "cid": cid})["totals"]

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(client, range(CLIENTS)))
    for mine, answer in zip(values, answers, strict=True):
        assert answer.tolist() == np.cumsum(mine).tolist()  # its own running state, no other client's


@pytest.mark.skipif(not release_at_least("23.12"), reason="BLS request parameters need tritonserver 2.41 (NGC 23.12)")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_caller_hands_its_request_s_parameters_on(server, protocol):
    sent = {"tenant": "acme", "k": 3, "fast": True}
    answer = infer(protocol, server, "Relay", {"x": np.zeros(1, np.float32)}, parameters=sent)
    assert json.loads(answer["params"][0]) == {**sent, "relayed": True}


@pytest.mark.skipif(
    not release_at_least("24.04"),
    reason="a decoupled model's async BLS call (stream_async) needs python_backend r24.04: before it, 'Async BLS "
    "request execution is not support in the decoupled API' (docs/known-issues.md)",
)
def test_a_streaming_call_carries_parameters(server):
    steps = stream(server, "StreamRelay", {"x": np.array([4.0], np.float32)})
    assert [float(step["y"][0]) for step in steps] == [4.0, 5.0, 6.0, 7.0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_caller_picks_the_called_model_s_version(server, protocol):
    answer = infer(protocol, server, "Picker", {"x": np.array([10.0], np.float32)})
    assert answer["y"].tolist() == [11.0, 12.0, 12.0]  # version 1, version 2, the latest


@pytest.mark.parametrize("model", ["Impatient", "ImpatientAsync"])
def test_a_called_model_that_outlives_the_timeout_answers_the_caller_with_a_timeout(server, model):
    assert [s.decode() for s in infer("grpc", server, model, {"x": np.array([0.01], np.float32)})["code"]] == ["ok"]
    began = time.perf_counter()
    answer = infer("grpc", server, model, {"x": np.array([3.0], np.float32)})
    took = time.perf_counter() - began
    assert [s.decode() for s in answer["code"]] == ["ModelCallTimeout", "UNAVAILABLE", "True"]
    assert took < 2.5, took  # the caller's answer came at its 0.5 s timeout, not after Sleepy's 3 s
    infer("grpc", server, "Sleepy", {"x": np.zeros(1, np.float32)})  # before 24.06 it waits for the abandoned call


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_uncaught_timeout_is_the_client_s_answer_in_time(server, protocol):
    began = time.perf_counter()
    with pytest.raises(InferenceServerException) as raised:
        infer(protocol, server, "Uncaught", {"x": np.array([3.0], np.float32)})
    took = time.perf_counter() - began
    said = "ModelCallTimeout [UNAVAILABLE]: model 'Sleepy' did not answer within its 0.5 s timeout"
    assert said in raised.value.message() and raised.value.status() == expected_status(protocol, "UNAVAILABLE")
    assert took < 2.5, took
    infer(protocol, server, "Sleepy", {"x": np.zeros(1, np.float32)})  # as above


def test_a_stream_that_outlives_the_timeout_ends_the_call_at_the_timeout(server):
    answer = infer("grpc", server, "StreamTimeout", {"x": np.array([0.4], np.float32)})
    codes = [s.decode() for s in answer["code"]]
    assert codes[-1] == "UNAVAILABLE" and codes[:-1] == [str(i) for i in range(len(codes) - 1)], codes
    assert 1 <= len(codes) - 1 <= 3, codes  # tokens every 0.4 s for a 1 s timeout


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_called_model_s_error_reaches_the_caller_with_its_code(server, protocol):
    """The code is python_backend's: INTERNAL for every BLS error before r25.04 (its InferResponseComplete replaces
    the called model's; #398 keeps it from r25.04), and for a request Triton refuses before it runs (a wrong shape)
    on every release. tests/unit/runtime/test_bls_options.py holds a code python_backend keeps."""
    answer = infer(protocol, server, "Codes", {"x": np.zeros(1, np.float32)})
    shape, raised = (s.decode().split(":", 2) for s in answer["code"])
    assert shape[:2] == ["INTERNAL", "Strict"] and "unexpected shape for input 'x' for model 'Strict'" in shape[2]
    assert raised[:2] == ["INTERNAL", "Strict"] and "ValueError: negative" in raised[2]
