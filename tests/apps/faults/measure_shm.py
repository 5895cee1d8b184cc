"""Measure the /dev/shm one Python model instance really uses (docs/deployment.md, "Shared memory").

    .venv/bin/python tests/apps/faults/measure_shm.py [--triton-release 2.51.0] [--python 3.10]

Builds ``shm.py`` (an echo model with dynamic batching up to 16 and the same model without
batching), serves it with the embedded stock tritonserver, sends 16-float and 4 MB requests at
concurrency 1 and 16 over gRPC, and prints each instance's shared-memory region after every step:
its size and the memory it holds (a region grows by ``shm-growth-byte-size`` and never shrinks
while the model is loaded, so the size after a step is that step's peak).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

from repogen.server.provision.install import default_cache_dir, ensure_server, ensure_server_venv, venv_info
from repogen.server.provision.pythons import require_python
from repogen.server.running.process import TritonServer
from repogen.triton.releases import get_release

HERE = Path(__file__).resolve().parent
MODELS = ("Batched", "Single")
REQUESTS = {16: 400, 1 << 20: 40}  # per client: small requests are cheap, 4 MB ones are not


def regions(server: TritonServer) -> dict[str, tuple[int, int]]:
    """Model -> (region size, bytes it holds) for each stub of ``server``, from the stubs' command lines."""
    found = {}
    for pid in server.process_group_pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if argv[0].endswith("triton_python_backend_stub") and len(argv) > 2:
            stat = os.stat(f"/dev/shm/{argv[2]}")
            found[Path(argv[1]).parent.parent.name] = (stat.st_size, stat.st_blocks * 512)
    return found


def load(server: TritonServer, model: str, floats: int, clients: int) -> int:
    x = np.ones((1, floats), np.float32)
    failures = []

    def client() -> None:
        c = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        for _ in range(REQUESTS[floats]):
            try:
                c.infer(model, [tensor])
            except Exception as exc:
                failures.append(exc)
        c.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(failures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triton-release", "--release", dest="release", default="2.51.0")
    parser.add_argument("--python", default="3.10")
    options = parser.parse_args()
    release = get_release(options.release)
    cache = default_cache_dir()
    install = ensure_server(release, cache_dir=cache)
    venv = venv_info(ensure_server_venv(python=require_python(options.python), numpy=release.numpy, cache_dir=cache))
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        build = [sys.executable, "-m", "repogen", "build", f"{HERE / 'shm.py'}:models", "-o", str(repo)]
        subprocess.run(build, check=True, stdout=subprocess.DEVNULL)
        with TritonServer(repo, install, venv, log_path=Path(tmp) / "tritonserver.log") as server:
            mib = 1024 * 1024
            print(f"tritonserver {release.tritonserver}, Python {venv.python_version}: region size / held, MiB")
            steps = [f"{'16 floats' if f == 16 else '4 MB'}, concurrency {c}" for f in REQUESTS for c in (1, 16)]
            print("| model | idle | " + " | ".join(steps) + " |")
            for model in MODELS:
                cells = [f"{regions(server)[model][0] / mib:.0f}"]
                for floats in REQUESTS:
                    for clients in (1, 16):
                        failed = load(server, model, floats, clients)
                        size, held = regions(server)[model]
                        cells.append(f"{size / mib:.0f} / {held / mib:.0f}" + (f" ({failed} failed)" if failed else ""))
                print(f"| {model} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
