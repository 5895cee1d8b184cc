"""``fuse=True`` answers exactly as the ensemble Triton schedules, served side by side."""

from __future__ import annotations

import concurrent.futures

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("fused") / "repo"
    result = cli_build("tests/apps/fused/app.py:models", repo)
    assert "Fused" in result.stdout
    assert "its steps written out" in (repo / "FusedChain" / "1" / "model.py").read_text()
    assert "its steps written out" not in (repo / "Fused" / "1" / "model.py").read_text()  # a class, an async step
    return serve(repo)


def _inputs(rows: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.uniform(0, 10, (rows, 3)).astype(np.float32),
        "b": rng.uniform(-1, 1, (rows, 3)).astype(np.float32),
    }


def _both(protocol, server, inputs, **kwargs):
    return [infer(protocol, server, model, inputs, **kwargs) for model in ("Pipeline", "Fused")]


def test_both_are_ready_and_the_steps_stay(server):
    status = {m["name"]: m.get("state") for m in server.models_status()}
    names = ["Affine", "Chain", "Combine", "Fused", "FusedChain", "Norm", "Pipeline", "Scale", "Tag"]
    assert status == dict.fromkeys(names, "READY")


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("rows", [1, 5])
def test_fused_answers_as_the_ensemble(server, protocol, rows):
    inputs = _inputs(rows, seed=rows)
    unfused, fused = _both(protocol, server, inputs)
    assert sorted(fused) == sorted(unfused) == ["scaled", "tagged", "total"]
    for name in unfused:
        assert fused[name].dtype == unfused[name].dtype and fused[name].shape == unfused[name].shape
        assert fused[name].tolist() == unfused[name].tolist(), name
    expected = (inputs["x"].astype(np.float64) * 2.5).astype(np.float32)  # Scale's shipped scale.txt
    np.testing.assert_array_equal(fused["scaled"], expected)
    assert fused["tagged"][0, 0] == b"=" + f"{fused['total'][0, 0]:.2f}".encode()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_request_parameters_reach_the_steps(server, protocol):
    unfused, fused = _both(protocol, server, _inputs(2, seed=7), parameters={"prefix": ">>"})
    assert fused["tagged"].tolist() == unfused["tagged"].tolist()
    assert all(t[0].startswith(b">>") for t in fused["tagged"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failing_step_fails_the_request_with_its_error(server, protocol):
    inputs = _inputs(2, seed=3)
    inputs["x"][1, 0] = -1.0
    messages = []
    for model in ("Pipeline", "Fused"):
        with pytest.raises(InferenceServerException) as info:
            infer(protocol, server, model, inputs)
        messages.append(str(info.value))
    assert all("ValueError: negative x: -1.0" in m for m in messages), messages


def test_concurrent_requests_batch_and_each_gets_its_own_rows(server):
    """The dynamic batcher merges these; each client must still get exactly its rows back."""
    cases = [_inputs(1 + i % 4, seed=100 + i) for i in range(24)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        fused = list(pool.map(lambda inputs: infer("grpc", server, "Fused", inputs), cases))
    for inputs, answer in zip(cases, fused, strict=True):
        (unfused,) = [infer("grpc", server, "Pipeline", inputs)]
        for name in unfused:
            assert answer[name].tolist() == unfused[name].tolist()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "case",
    ["straight", "float64 from the first step", "a failing second step", "five rows"],
)
def test_steps_written_out_answer_as_the_ensemble(server, protocol, case):
    """FusedChain's model.py runs Affine then Norm inline; where a result needs more, the runtime goes on."""
    rows = 5 if case == "five rows" else 2
    inputs = _inputs(rows, seed=11)
    inputs["x"] = np.minimum(inputs["x"], 8.5)
    if case == "float64 from the first step":
        inputs["x"][1, 2] = 9.5
    if case == "a failing second step":
        inputs["x"][1] = 0.0
        inputs["b"][1] = -2.0
    answers = []
    for model in ("Chain", "FusedChain"):
        try:
            answers.append(infer(protocol, server, model, inputs))
        except InferenceServerException as exc:
            answers.append(str(exc))
    unfused, fused = answers
    if case == "a failing second step":
        assert all("ValueError: negative sum: -9.0" in a for a in answers), answers
        return
    y = inputs["x"] * 2 + inputs["b"]
    np.testing.assert_array_equal(fused["y"], y)  # the answer's y, untouched by Norm's in-place write
    np.testing.assert_array_equal(fused["n"], (y - 1).sum(axis=1, keepdims=True))
    for name in unfused:
        assert fused[name].dtype == unfused[name].dtype == np.float32
        assert fused[name].tolist() == unfused[name].tolist(), name
