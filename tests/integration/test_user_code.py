"""User code in the server: a sibling helper module pickled by value, and a raising callable."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.testing.client import PROTOCOLS, InferenceServerException, infer

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("features") / "repo"
    cli_build("tests/apps/features/app.py:models", repo)
    # Doomed (PyTritonUnrecoverableError) stops the whole server: tests/integration/test_faults_served.py serves it
    # alone.
    return serve(repo, extra_args=("--exit-timeout-secs=3",))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_helper_from_sibling_module_runs_in_server(server, protocol):
    x = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    out = infer(protocol, server, "Normalize", {"x": x})
    np.testing.assert_allclose(out["y"], [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_exception_becomes_error_response_and_model_keeps_serving(server, protocol):
    with pytest.raises(InferenceServerException, match="ValueError: bad x"):
        infer(protocol, server, "Fragile", {"x": np.array([-1.0], dtype=np.float32)})
    out = infer(protocol, server, "Fragile", {"x": np.array([9.0], dtype=np.float32)})
    np.testing.assert_array_equal(out["y"], [3.0])
    assert server.model_ready("Fragile")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_set_constants_and_bool_outputs(server, protocol):
    words = np.array([[b"cat"], [b"yak"], [b"owl"]], dtype=object)
    out = infer(protocol, server, "Categories", {"word": words})
    assert out["known"].dtype == np.bool_
    assert out["known"].tolist() == [[True], [True], [False]]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_strict_names_the_output_lenient_casts(server, protocol):
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    with pytest.raises(
        InferenceServerException, match=r"model 'Strict' output 'y': expected dtype float32, found float64"
    ):
        infer(protocol, server, "Strict", {"x": x})
    out = infer(protocol, server, "Lenient", {"x": x})
    assert out["y"].dtype == np.float32 and out["y"].tolist() == [[2.0, 4.0]]
    assert out["n"].dtype == np.int32 and out["n"].tolist() == [[1]]  # one row in the batch


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_optional_input_may_be_left_out(server, protocol):
    x = np.array([2.0], dtype=np.float32)
    assert infer(protocol, server, "WithDefault", {"x": x})["y"].tolist() == [20.0]
    assert infer(protocol, server, "WithDefault", {"x": x, "scale": np.array([3.0], np.float32)})["y"].tolist() == [6.0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_error_in_called_model_reaches_the_outer_client(server, protocol):
    with pytest.raises(InferenceServerException, match="ModelCallError: model 'Fragile' failed: ValueError: bad x"):
        infer(protocol, server, "CallsFragile", {"x": np.array([-4.0], dtype=np.float32)})
    assert infer(protocol, server, "CallsFragile", {"x": np.array([4.0], dtype=np.float32)})["y"].tolist() == [3.0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("model", "expected"), [("InPlace", [[2.0, 4.0]]), ("InPlaceRequests", [[2.0, 3.0]])])
def test_inputs_are_the_callables_own_writable_arrays(server, protocol, model, expected):
    """Each input is the stub's aligned, writable copy (as_numpy), not a read-only view into shm."""
    out = infer(protocol, server, model, {"x": np.array([[1.0, 2.0]], dtype=np.float32)})
    assert out["own"].tolist() == [[True, True]]
    assert out["y"].tolist() == expected
