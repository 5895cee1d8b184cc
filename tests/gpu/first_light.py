"""First light of the GPU run (tests/gpu/device.sh): the kit's tritonserver serving tests/apps/gpu/cpu_app.py on a
KIND_CPU instance from the run's server Python, asked over HTTP and gRPC. It needs no GPU, so the CPU rehearsal
(``make gpu-rehearsal``) runs it too: python_backend's own ``to_dlpack``/``from_dlpack`` with torch's BF16 and a
torch and an array-API tensor sent from host memory, on the real stub; a model made on a GPU at bind time, its
tensors rebuilt on the KIND_CPU instance by the runtime in the server.

    REPOGEN_GPU_SERVER_VENV=... python tests/gpu/first_light.py WORKDIR
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

from repogen.server.provision.install import ensure_server, venv_info
from repogen.server.running.process import TritonServer
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.gpu import build, record_server

ROOT = Path(__file__).resolve().parents[2]
APP = "tests/apps/gpu/cpu_app.py:models"


def check(server: TritonServer, protocol: str) -> None:
    h = np.array([[1, 2, 3], [4, 5, 0.5]], dtype=ml_dtypes.bfloat16)
    out = infer(protocol, server, "Bf16", {"h": h})
    assert out["h"].dtype == ml_dtypes.bfloat16, out["h"].dtype
    assert out["h"].astype(np.float32).tolist() == [[2, 4, 6], [8, 10, 1]], out["h"]
    assert out["handed_on_cpu"].tolist() == [[1], [1]], out["handed_on_cpu"]
    out = infer(protocol, server, "HostTensors", {"x": np.array([[1.0, 2.0]], dtype=np.float32)})
    assert (out["t"].tolist(), out["a"].tolist(), out["handed_on_cpu"].tolist()) == ([[3, 6]], [[2, 3]], [[1]]), out
    x = np.array([[1.0, 2.0]], dtype=np.float32)
    out = infer(protocol, server, "MadeOnGpu", {"x": x})
    np.testing.assert_allclose(out["y"], made_on_gpu_reference(x), rtol=1e-5, atol=1e-6)
    assert out["facts"].tolist() == [[1, 1, 1, 1]], out["facts"]  # Parameters, requires_grad, tied, on the CPU


def made_on_gpu_reference(x: np.ndarray) -> np.ndarray:
    """What cpu_app.py's MadeOnGpu answers, computed here on the CPU."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    model[1].weight = model[0].weight
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()


def main(work: Path) -> int:
    start = time.monotonic()
    repo = work / "repo"
    done = build(APP, repo, ROOT)
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        return 1
    print(f"built {APP} in {time.monotonic() - start:.1f} s", flush=True)
    venv = venv_info(os.environ["REPOGEN_GPU_SERVER_VENV"])
    server = TritonServer(repo, ensure_server("2.51.0"), venv, log_path=work / "tritonserver.log")
    try:
        server.start()
        record_server(server, "first-light")
        server.wait_ready(90)
        print(f"tritonserver 2.51.0 + Python {venv.python_version} ready at {time.monotonic() - start:.1f} s")
        for protocol in PROTOCOLS:
            check(server, protocol)
            print(f"{protocol}: Bf16, HostTensors and MadeOnGpu answered as expected", flush=True)
    except Exception:
        print(server.log_tail() if server.is_running() or (work / "tritonserver.log").exists() else "", flush=True)
        raise
    finally:
        server.stop()
    print(f"first light in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
