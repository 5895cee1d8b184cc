"""PyTriton's decorators end to end: one model per decorator, served by stock tritonserver."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer

pytestmark = pytest.mark.integration

MODELS = ("Batch", "FillOptionals", "FirstValue", "GroupByKeys", "GroupByValues", "PadBatch", "Sample", "TritonContext")


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("decorators") / "repo"
    result = cli_build("tests/apps/decorators/app.py:models", repo)
    assert f"Built {len(MODELS)} model(s)" in result.stdout
    return serve(repo)


def _f32(*rows):
    return np.array([[v] for v in rows], dtype=np.float32)


def _bytes(*rows):
    return np.array([[v] for v in rows], dtype=object)


def test_every_model_is_ready(server):
    assert {m["name"]: m.get("state") for m in server.models_status()} == dict.fromkeys(MODELS, "READY")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_batch(server, protocol):
    assert infer(protocol, server, "Batch", {"x": _f32(1, 2)})["y"].tolist() == [[2], [4]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sample_receives_keyword_arrays_and_returns_a_list(server, protocol):
    out = infer(protocol, server, "Sample", {"x": np.array([1, 2, 3], dtype=np.float32)})
    assert out["y"].tolist() == [1, 3, 6] and out["n"].tolist() == [3]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_group_by_keys_with_and_without_the_optional_input(server, protocol):
    assert infer(protocol, server, "GroupByKeys", {"x": _f32(1, 2)})["y"].tolist() == [[1], [2]]
    out = infer(protocol, server, "GroupByKeys", {"x": _f32(1, 2), "offset": _f32(10, 20)})
    assert out["y"].tolist() == [[11], [22]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_group_by_values_groups_bytes_and_pads(server, protocol):
    inputs = {"text": _bytes(b"Ab", b"Cd", b"Ef"), "mode": _bytes(b"up", b"down", b"up")}
    out = infer(protocol, server, "GroupByValues", inputs)
    assert out["out"].tolist() == [[b"AB"], [b"cd"], [b"EF"]]
    assert out["codes"].tolist() == [[2, 2, -1, -1], [4, 4, 4, 4], [2, 2, -1, -1]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fill_optionals_uses_the_default(server, protocol):
    assert infer(protocol, server, "FillOptionals", {"x": _f32(2, 4)})["y"].tolist() == [[1], [2]]
    out = infer(protocol, server, "FillOptionals", {"x": _f32(2, 4), "temperature": _f32(3, 3)})
    assert out["y"].tolist() == [[6], [12]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("size", "padded"), [(1, 4), (3, 4), (5, 8)])
def test_pad_batch_pads_to_preferred_then_max(server, protocol, size, padded):
    out = infer(protocol, server, "PadBatch", {"x": _f32(*range(size))})
    assert out["y"].ravel().tolist() == [v + 1 for v in range(size)]
    assert out["seen"].ravel().tolist() == [padded] * size


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_first_value_passes_a_scalar_and_rejects_unequal_values(server, protocol):
    out = infer(protocol, server, "FirstValue", {"x": _f32(1, 2), "scale": _f32(3, 3)})
    assert out["y"].tolist() == [[3], [6]] and out["scalar"].tolist() == [[True], [True]]
    with pytest.raises(InferenceServerException, match="The values on the 'scale' input are not equal"):
        infer(protocol, server, "FirstValue", {"x": _f32(1, 2), "scale": _f32(3, 4)})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_triton_context_on_a_method_describes_the_served_model(server, protocol):
    out = infer(protocol, server, "TritonContext", {"x": _f32(0)})
    assert out["name"].tolist() == [[b"model:TritonContext"]]
    assert out["described"].tolist() == [[b"['x']/4/CPU"]]
