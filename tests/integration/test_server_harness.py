"""The harness itself: install, start, serve over HTTP and gRPC, stop without leftovers.

The model is hand-written on purpose: this test proves the harness, not repogen's emitter.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from repogen.server.running.process import TritonServer, pid_alive
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration

CONFIG = """\
name: "double"
backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "NUMPY_VERSION" data_type: TYPE_STRING dims: [ 1 ] }
]
instance_group [ { count: 1 kind: KIND_CPU } ]
"""

MODEL = """\
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            version = np.array([[np.__version__.encode()]] * x.shape[0], dtype=np.object_)
            outputs = [
                pb_utils.Tensor("OUTPUT0", (x * 2).astype(np.float32)),
                pb_utils.Tensor("NUMPY_VERSION", version),
            ]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
"""


def write_repository(root: Path) -> Path:
    model_dir = root / "double"
    (model_dir / "1").mkdir(parents=True)
    (model_dir / "config.pbtxt").write_text(CONFIG)
    (model_dir / "1" / "model.py").write_text(MODEL)
    return root


def http_infer(server: TritonServer, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    client = httpclient.InferenceServerClient(url=server.http_url)
    inp = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = client.infer("double", [inp])
    client.close()
    return result.as_numpy("OUTPUT0"), result.as_numpy("NUMPY_VERSION")


def grpc_infer(server: TritonServer, x: np.ndarray) -> np.ndarray:
    client = grpcclient.InferenceServerClient(url=server.grpc_url)
    inp = grpcclient.InferInput("INPUT0", list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = client.infer("double", [inp])
    client.close()
    out: np.ndarray = result.as_numpy("OUTPUT0")
    return out


def test_serves_http_and_grpc_then_stops_cleanly(
    triton_server: Callable[..., TritonServer], triton_install: TritonInstallation, tmp_path: Path
) -> None:
    server: TritonServer = triton_server(write_repository(tmp_path / "repo"))

    assert server.model_ready("double")
    assert [(m["name"], m["state"]) for m in server.models_status()] == [("double", "READY")]
    stubs = [pid for pid in server.process_group_pids() if pid != server.pid]
    assert stubs, "expected a Python backend stub process in the server's process group"

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    doubled, numpy_version = http_infer(server, x)
    np.testing.assert_array_equal(doubled, x * 2)
    # The model runs in the numpy-only server venv, like a stock container.
    assert numpy_version[0, 0].decode() == triton_install.venv.numpy == "1.26.4"
    np.testing.assert_array_equal(grpc_infer(server, x + 1), (x + 1) * 2)

    pid = server.pid
    assert server.stop() == 0  # a graceful stop: SIGINT, every model unloaded, the server's own exit
    # Judged by what happened, not by a clock: the server unloaded the model (its stub ran finalize and exited: the
    # server logs this only after), and stop() returns once the server and every process of its group are gone.
    assert "successfully unloaded 'double' version 1" in server.log_text(), server.log_tail()
    assert not pid_alive(pid)
    assert not any(pid_alive(p) for p in stubs), f"stub processes left behind: {stubs}"
    assert server.process_group_pids() == []
    assert "Started HTTPService at 127.0.0.1" in server.log_text()
