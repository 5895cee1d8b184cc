"""Errors that point at the user: a failing callable's answer names the exception and the
user's file:line, in words that say the model failed (not that the request was refused); the server
log keeps the traceback readable, one record per line; a load failure names the user's frame, not
repogen's runtime, and a misspelt shipped file gets the close match."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from repogen.errors import InferError
from repogen.server.client.infer import ModelClient
from repogen.server.client.states import model_states

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

FAILED = "model 'Checked' failed the request: KeyError: 'large' (at app.py:13, in checked)"


@pytest.fixture(scope="module")
def server(serve, cli_build, tmp_path_factory):
    repo = tmp_path_factory.mktemp("failing") / "repo"
    cli_build("tests/apps/failing/app.py:models", repo)
    return serve(repo)


def _infer(server, protocol: str, value: str) -> subprocess.CompletedProcess[str]:
    url = server.http_url if protocol == "http" else server.grpc_url
    cmd = [sys.executable, "-m", "repogen", "infer", "Checked", "--input", f"x=[[{value}]]", "--url", url,
           "--protocol", protocol]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_failing_callable_names_the_users_line(server, protocol):
    result = _infer(server, protocol, "11")
    assert result.returncode == 1
    assert f"Error: {FAILED}. The server log has the traceback." in result.stderr, result.stderr


def test_the_log_keeps_the_traceback_readable(server):
    _infer(server, "http", "12")
    log = server.log_text()
    assert "model 'Checked': infer_func raised KeyError: 'large' (at app.py:13, in checked); traceback:" in log
    lines = [line for line in log.splitlines() if "model 'Checked' | " in line]
    assert any(line.rstrip('"').endswith("model 'Checked' | Traceback (most recent call last):") for line in lines)
    assert any(line.rstrip('"').endswith("model 'Checked' | KeyError: 'large'") for line in lines)
    assert not any("\\nTraceback" in line for line in log.splitlines())


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_wrong_shape_is_refused_by_the_server(server, protocol):
    url = server.http_url if protocol == "http" else server.grpc_url
    with ModelClient(protocol, url) as client, pytest.raises(InferError) as caught:
        client.infer("Checked", {"x": ("FP32", np.ones((1, 2), dtype=np.float32))}, [])
    assert str(caught.value).startswith("model 'Checked' refused the request: "), str(caught.value)


def test_a_load_failure_names_the_users_frame_and_the_close_match(triton_server, cli_build, tmp_path):
    repo = tmp_path / "repo"
    cli_build("tests/apps/failing/misnamed.py:models", repo)
    server = triton_server(repo, extra_args=("--exit-on-error=false", "--strict-readiness=false"))
    (state,) = model_states(server.models_status())
    assert state.failed
    line = state.line()
    assert "has no shipped file 'scales.npy'; shipped: ['scale.npy']. Did you mean 'scale.npy'?" in line, line
    assert line.endswith("(at misnamed.py(12): __init__)"), line
