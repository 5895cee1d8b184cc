"""`repogen load` / `repogen unload` against `repogen serve --model-control-mode explicit`.

Over HTTP and gRPC: an unloaded model is UNAVAILABLE and refuses requests, a loaded one is READY and
answers. A name the repository lacks gets its close match, a model that fails to load gets the server's
reason (and keeps serving the version it had, if any), and a server without explicit model control gets
Triton's answer quoted with the way to start one that has it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc
import tritonclient.http
from serve_cli import ROOT, repogen
from tritonclient.utils import InferenceServerException

from repogen.errors import ModelControlError
from repogen.server.client.control import load_model, unload_model
from repogen.server.client.infer import ModelClient
from repogen.server.client.states import model_states
from repogen.server.running.server_process import ServerProcess
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

APP = f"{ROOT / 'tests' / 'apps' / 'banner' / 'app.py'}:models"
MIXED = ("--input", "x=[[1,2,3]]", "--input", "v=[[4,5]]", "--input", "text=hi")


@pytest.fixture(scope="module")
def explicit(triton_install: TritonInstallation, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The app served as `repogen serve APP --model-control-mode explicit -o DIR` serves it, in this process."""
    repo = tmp_path_factory.mktemp("control") / "repo"
    with triton_install.serving(APP, control="explicit", output=repo) as serving:
        assert serving.server is not None and len(serving.status().models) == 2
        yield serving.server


def _url(serve: ServerProcess, protocol: str) -> str:
    return serve.http_url if protocol == "http" else serve.grpc_url


def _state(serve: ServerProcess, name: str) -> str:
    """The model's state in the repository index, which needs the serve run's key (found as repogen's commands do)."""
    with ModelClient("http", _url(serve, "http")) as client:
        return next(s.state for s in model_states(client.index()) if s.name == name)


def _mixed_inputs(module: Any) -> list[Any]:
    arrays = {
        "x": ("FP32", np.ones((1, 3), np.float32)),
        "v": ("INT32", np.ones((1, 1), np.int32)),
        "text": ("BYTES", np.array([[b"hi"]], dtype=object)),
    }
    inputs = []
    for name, (datatype, array) in arrays.items():
        tensor = module.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        inputs.append(tensor)
    return inputs


def _cli(serve: ServerProcess, protocol: str, *args: str) -> tuple[int, str, str]:
    result = repogen(*args, "--url", _url(serve, protocol), "--protocol", protocol)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_unload_then_load(explicit: ServerProcess, protocol: str) -> None:
    code, out, err = _cli(explicit, protocol, "unload", "Mixed")
    assert (code, out, err) == (0, "Mixed (version 1): UNAVAILABLE (unloaded)\n", "")
    assert _state(explicit, "Mixed") == "UNAVAILABLE"
    assert _state(explicit, "Plain") == "READY"  # only the one named
    code, _, err = _cli(explicit, protocol, "infer", "Mixed", *MIXED)
    assert code == 1 and "model 'Mixed' is not available" in err
    module = tritonclient.http if protocol == "http" else tritonclient.grpc
    with module.InferenceServerClient(_url(explicit, protocol)) as client:
        assert not client.is_model_ready("Mixed")
        with pytest.raises(InferenceServerException, match="unknown model"):
            client.infer("Mixed", _mixed_inputs(module))

    code, out, err = _cli(explicit, protocol, "load", "Mixed")
    assert code == 0, err
    assert out.startswith("Mixed (version 1): READY in ")
    assert _state(explicit, "Mixed") == "READY"
    code, out, err = _cli(explicit, protocol, "infer", "Mixed", *MIXED, "--json")
    assert code == 0, err
    assert {o["name"]: o["data"] for o in json.loads(out)["outputs"]} == {"total": [[15.0]], "loud": [["HI"]]}
    with module.InferenceServerClient(_url(explicit, protocol)) as client:
        assert client.infer("Mixed", _mixed_inputs(module)).as_numpy("total").tolist() == [[4.0]]


def test_library_calls_answer_the_settled_state(explicit: ServerProcess) -> None:
    state = unload_model("Plain", url=_url(explicit, "grpc"), protocol="grpc")
    assert (state.name, state.state) == ("Plain", "UNAVAILABLE")
    state = load_model("Plain", url=_url(explicit, "grpc"), protocol="grpc")
    assert (state.name, state.version, state.state) == ("Plain", "1", "READY")


def test_unknown_model_gets_the_close_match(explicit: ServerProcess) -> None:
    for command in ("load", "unload"):
        code, _, err = _cli(explicit, "http", command, "Mixd")
        assert code == 1
        assert err == (
            f"Error: the server at {_url(explicit, 'http')} has no model 'Mixd' in its repository. Did you mean "
            "'Mixed'? Its models: Mixed, Plain.\n"
        )


def test_load_failure_names_the_reason(explicit: ServerProcess) -> None:
    """A payload changed after the build fails the model's initialize on every release; the reason is the server's."""
    payload = explicit.model_repository / "Plain" / "1" / "model.pkl"
    saved = payload.read_bytes()
    reason = f"failed to load: PayloadError: refusing to unpickle {payload}: sha256 mismatch"
    try:
        payload.write_bytes(b"garbage")
        code, _, err = _cli(explicit, "http", "load", "Plain")  # reloading a READY model: the old one stays
        assert code == 1
        assert err.startswith(f"Error: model 'Plain' {reason}"), err
        assert err.endswith(
            "The server log has the traceback; the server still serves the version loaded before. Fix the model and "
            "run `repogen load Plain` again.\n"
        )
        assert _state(explicit, "Plain") == "READY"
        assert _cli(explicit, "grpc", "unload", "Plain")[0] == 0
        code, _, err = _cli(explicit, "grpc", "load", "Plain")
        assert code == 1
        assert err.startswith(f"Error: model 'Plain' {reason}") and "still serves" not in err, err
        assert _state(explicit, "Plain") == "UNAVAILABLE"
    finally:
        payload.write_bytes(saved)
    code, out, err = _cli(explicit, "http", "load", "Plain")
    assert code == 0 and out.startswith("Plain (version 1): READY"), err


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_without_explicit_model_control(triton_install: TritonInstallation, protocol: str) -> None:
    with triton_install.serving(APP) as serving:
        serve = serving.server
        assert serve is not None and len(serving.status().models) == 2
        for command in ("load", "unload"):
            code, _, err = _cli(serve, protocol, command, "Mixed")
            assert code == 1
            assert err == (
                f"Error: the server at {_url(serve, protocol)} does not load or unload models on request; it "
                "answered 'explicit model load / unload is not allowed if polling is enabled' (it runs without "
                "--model-control-mode=explicit). Serve with `repogen serve DIR --model-control-mode explicit` (or "
                "--model NAME), or start tritonserver with --model-control-mode=explicit.\n"
            )
        with pytest.raises(ModelControlError):
            unload_model("Mixed", url=_url(serve, protocol), protocol=protocol)
        assert _state(serve, "Mixed") == "READY"
