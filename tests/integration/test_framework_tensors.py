"""A framework's tensors end to end on the stock server: tests/apps/frameworks (array_api_strict, shipped inside
the repository; the server's Python has numpy only) built with the CLI, served, and asked over HTTP and gRPC.

Every model reports what its callable was handed, so each assertion says both what came back and whether the
runtime gave the callable the tensors it asked for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, infer, stream

pytestmark = [pytest.mark.integration, pytest.mark.smoke]

MODELS = ("CallsFramework", "CallsNumpy", "Chain", "ChainFused", "Counts", "FrameworkIn", "FrameworkOut", "Minus")


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("frameworks") / "repo"
    result = cli_build("tests/apps/frameworks/app.py:models", repo)
    assert "Built 10 model(s)" in result.stdout and "Shipped 1 distribution(s)" in result.stdout
    return serve(repo)


def _f32(*rows: float) -> np.ndarray:
    return np.array([[v] for v in rows], dtype=np.float32)


def _together(protocol, server, model, requests):
    """``requests`` sent at once: the dynamic batcher (300 ms) hands them to one execute."""
    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(lambda inputs: infer(protocol, server, model, inputs), requests))


def test_every_model_is_ready(server):
    states = {m["name"]: m.get("state") for m in server.models_status()}
    assert {name: states.get(name) for name in MODELS} == dict.fromkeys(MODELS, "READY")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_framework_outputs_are_cut_per_request_and_sent(server, protocol):
    answers = _together(protocol, server, "FrameworkOut", [{"x": _f32(1)}, {"x": _f32(2, 3)}])
    assert [a["y"].tolist() for a in answers] == [[[2]], [[4], [6]]]
    assert [a["rows"].tolist() for a in answers] == [[[3]], [[3], [3]]]  # one batch of three rows


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_framework_model_takes_its_tensors_through_every_decorator(server, protocol):
    requests = [{"x": _f32(1), "k": np.array([[5]], dtype=np.int32)}, {"x": _f32(2, 3)}]  # the second's k: 1
    answers = _together(protocol, server, "FrameworkIn", requests)
    assert [a["y"].tolist() for a in answers] == [[[5]], [[2], [3]]]
    assert [a["kind"].tolist() for a in answers] == [[[2]], [[2], [2]]]  # x and k: the framework's, filled k too
    assert [a["rows"].tolist() for a in answers] == [[[4]], [[4], [4]]]  # each group padded to max_batch_size


@pytest.mark.parametrize("model", ["Chain", "ChainFused"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_step_gets_what_it_asked_for(server, protocol, model):
    out = infer(protocol, server, model, {"x": _f32(1, 2)})
    assert out["y"].tolist() == [[4], [7]]  # ((x + 1) * 3) - 2
    assert (out["k1"].tolist(), out["k2"].tolist(), out["k3"].tolist()) == ([[0], [0]], [[1], [1]], [[0], [0]])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bls_answers_in_the_callers_kind_of_tensor(server, protocol):
    framework = infer(protocol, server, "CallsNumpy", {"x": _f32(5)})
    assert (framework["y"].tolist(), framework["kind"].tolist()) == ([[3]], [[1]])
    numpy = infer(protocol, server, "CallsFramework", {"x": _f32(5)})
    assert (numpy["y"].tolist(), numpy["kind"].tolist()) == ([[15]], [[0]])


def test_a_decoupled_model_streams_framework_tensors(server):
    responses = stream(server, "Counts", {"n": np.array([3], dtype=np.int32)})
    assert [r["count"].tolist() for r in responses] == [[0.0], [1.0], [2.0]]
