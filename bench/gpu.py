"""The GPU benchmark: generated KIND_GPU models against their hand-written twins, and a two-step ensemble whose
tensor stays on the GPU against the same steps through host memory. Run on a GPU machine (tests/gpu/device.sh).

Every model is served by one tritonserver (2.51.0, the wheel's CUDA build) from the GPU suite's server Python
(``REPOGEN_GPU_SERVER_VENV``: numpy 1.26.4 and torch) and measured with perf_analyzer over gRPC, closed loop at
each concurrency; rounds alternate which of a pair goes first, and each figure is the median over rounds. The
hand-written twins get the generated model's own config (only the name differs). GPU memory per instance is
what ``nvidia-smi`` says each backend stub holds.

    python bench/gpu.py --out gpu-bench.json [--rounds 3] [--window 1.0] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from repogen.server.provision.install import ensure_server, venv_info
from repogen.server.provision.perf_analyzer import ensure_perf_analyzer
from repogen.server.running.process import TritonServer
from repogen.testing.gpu import build_arguments, gpu_names
from repogen.triton.proto import model_config_pb2

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from perf import measure  # noqa: E402  (bench/perf.py)

APP = "bench/apps/gpu_app.py:models"
PAIRS = (("GpuNumpy", "GpuNumpyHW"), ("GpuTorch", "GpuTorchHW"), ("TwoStepGpu", "TwoStepHost"))
STUBS = ("GpuNumpy", "GpuNumpyHW", "GpuTorch", "GpuTorchHW")  # models whose one instance's memory is compared


def build(out: Path) -> None:
    command = [sys.executable, "-m", "repogen", "build", APP, "-o", str(out), *build_arguments()]
    subprocess.run(command, cwd=BENCH.parent, check=True)
    for generated, handwritten in (("GpuNumpy", "GpuNumpyHW"), ("GpuTorch", "GpuTorchHW")):
        shutil.copytree(BENCH / "handwritten" / handwritten, out / handwritten)
        config = text_format.Parse((out / generated / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
        config.name = handwritten
        for group in config.instance_group:
            group.name = group.name.replace(generated, handwritten, 1)
        (out / handwritten / "config.pbtxt").write_text(text_format.MessageToString(config))


def stub_memory(server: TritonServer) -> dict[str, float]:
    """MiB of GPU memory each model's backend stub holds (one instance each), as nvidia-smi reports it."""
    query = ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
    used = {}
    for line in subprocess.run(query, capture_output=True, text=True, check=True).stdout.splitlines():
        pid, mib = (field.strip() for field in line.split(","))
        used[int(pid)] = float(mib)
    found: dict[str, float] = {}
    for pid in server.process_group_pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[1].endswith(b"model.py") and pid in used:
            model = Path(argv[1].decode()).parent.parent.name
            found[model] = found.get(model, 0.0) + used[pid]
    return found


def summarize(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pair and concurrency: each side's median throughput and p50, and their ratios (first / second)."""
    rows = []
    for first, second in PAIRS:
        for concurrency in sorted({p["concurrency"] for p in points}):
            side = {}
            for model in (first, second):
                mine = [p for p in points if p["model"] == model and p["concurrency"] == concurrency]
                side[model] = {
                    "throughput": statistics.median(p["throughput"] for p in mine),
                    "p50_us": statistics.median(p["p50_us"] for p in mine),
                }
            rows.append({
                "pair": [first, second], "concurrency": concurrency, **{m: side[m] for m in (first, second)},
                "throughput_ratio": side[first]["throughput"] / side[second]["throughput"],
                "p50_ratio": side[first]["p50_us"] / side[second]["p50_us"],
            })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args(argv)
    card = "\n".join(gpu_names())
    if not card:
        parser.error("no NVIDIA GPU on this machine (nvidia-smi lists none): run it on one (tests/gpu/device.sh)")
    venv = venv_info(os.environ["REPOGEN_GPU_SERVER_VENV"])
    with tempfile.TemporaryDirectory(prefix="repogen-gpu-bench-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo)
        server = TritonServer(repo, ensure_server("2.51.0"), venv, log_path=Path(tmp) / "tritonserver.log")
        perf = ensure_perf_analyzer()
        points: list[dict[str, Any]] = []
        server.start()
        try:
            server.wait_ready(300)
            for round_ in range(args.rounds):
                for concurrency in args.concurrency:
                    for pair in PAIRS:
                        for model in pair if round_ % 2 == 0 else pair[::-1]:
                            point = measure(perf, model, server.grpc_url, "grpc", {}, concurrency, args.window)
                            points.append({"model": model, "concurrency": concurrency, "round": round_, **point})
                            print(f"round {round_} c={concurrency} {model}: {point['throughput']:.0f}/s "
                                  f"p50 {point['p50_us']:.0f} us", flush=True)  # fmt: skip
            memory = stub_memory(server)
        finally:
            server.stop()
    result = {
        "card": card, "tritonserver": "2.51.0", "server_python": venv.python_version, "protocol": "grpc",
        "rounds": args.rounds, "window_s": args.window, "points": points, "summary": summarize(points),
        "gpu_memory_mib": {model: memory.get(model) for model in STUBS},
    }  # fmt: skip
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for row in result["summary"]:
        first, second = row["pair"]
        print(f"{first} / {second} at c={row['concurrency']}: throughput {row['throughput_ratio']:.3f}, "
              f"p50 {row['p50_ratio']:.3f}")  # fmt: skip
    print("GPU memory per instance (MiB):", result["gpu_memory_mib"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
