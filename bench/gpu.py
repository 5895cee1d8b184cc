"""The GPU benchmark: generated KIND_GPU models against their hand-written twins, and a two-step ensemble whose
4 MB tensor stays on the GPU against the same steps through host memory. Run on a GPU machine (tests/gpu/device.sh).

Every model is served by one tritonserver (2.51.0, the wheel's CUDA build) from the GPU suite's server Python
(``REPOGEN_GPU_SERVER_VENV``: numpy 1.26.4 and torch) and measured with perf_analyzer over gRPC, closed loop: only
the points the figures need (each pair at c=1 and c=8, the ensembles at c=1). Rounds alternate which of a pair goes
first; each figure is the median over rounds. The hand-written twins get the generated model's own config (only the
name differs). Made to be cut short: each point is a JSON line in ``--points`` as it is measured, the figures are
rewritten to ``--out`` after every round, and no round starts that ``--budget-s`` cannot hold.

GPU memory per instance is what the device's used memory drops by when that model (one instance) is unloaded,
read with ``nvidia-smi --query-gpu``: the device's own figure, which holds inside a container, where nvidia-smi's
per-process pids are the host's and match none of the container's.

    python bench/gpu.py --out gpu-bench.json [--points points.jsonl] [--rounds 3] [--window 0.5] [--budget-s 150]

Without a GPU it builds the repository and stops at its GPU check, saying so, with exit status 3.
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
import time
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from repogen.server.provision.install import ensure_server, venv_info
from repogen.server.provision.perf_analyzer import ensure_perf_analyzer
from repogen.server.running.process import TritonServer
from repogen.testing.gpu import build_arguments, gpu_names, record_server
from repogen.triton.proto import model_config_pb2

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from perf import measure  # noqa: E402  (bench/perf.py)

APP = "bench/apps/gpu_app.py:models"
# (first, second, concurrencies): the figures docs/benchmarks.md reports, and no other point.
PAIRS = (
    ("GpuNumpy", "GpuNumpyHW", (1, 8)), ("GpuTorch", "GpuTorchHW", (1, 8)), ("TwoStepGpu", "TwoStepHost", (1,)),
)  # fmt: skip
STUBS = ("GpuNumpy", "GpuNumpyHW", "GpuTorch", "GpuTorchHW")  # models whose one instance's memory is compared
NO_GPU = 3  # the exit status without a GPU (the CPU rehearsal expects it)
# The ensembles' 4 MB tensors, a batch of them in flight per step: more than Triton's default 64 MB CUDA pool.
POOL = ["--cuda-memory-pool-byte-size=0:536870912"]
MEMORY_RESERVE_S = 25  # what reading the memory of STUBS takes at the end


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


def used_mib() -> float:
    """GPU 0's used memory (MiB), the device's own figure."""
    query = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "--id=0"]
    return float(subprocess.run(query, capture_output=True, text=True, check=True).stdout.strip())


def instance_memory(server: TritonServer, models: tuple[str, ...]) -> dict[str, float]:
    """MiB each of ``models`` (one instance each) frees when unloaded: its stub's CUDA context, torch and weights."""
    found = {}
    with server.client(timeout=60.0) as client:
        for model in models:
            if not client.is_model_ready(model):
                print(f"GPU memory of {model}'s instance: not read, it is not loaded", flush=True)
                continue
            before = used_mib()
            client.unload_model(model)
            deadline = time.monotonic() + 20
            while client.is_model_ready(model) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2.0)  # the stub's exit frees its context after the model is marked unloaded
            found[model] = before - used_mib()
            print(f"GPU memory of {model}'s instance: {found[model]:.0f} MiB", flush=True)
    return found


def summarize(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per pair and concurrency: each side's median throughput and p50, and their ratios (first / second)."""
    rows = []
    for first, second, concurrencies in PAIRS:
        for concurrency in concurrencies:
            side = {}
            for model in (first, second):
                mine = [p for p in points if p["model"] == model and p["concurrency"] == concurrency]
                if mine:
                    side[model] = {
                        "rounds": len(mine), "throughput": statistics.median(p["throughput"] for p in mine),
                        "p50_us": statistics.median(p["p50_us"] for p in mine),
                    }  # fmt: skip
            if len(side) < 2:
                continue
            rows.append({
                "pair": [first, second], "concurrency": concurrency, **side,
                "throughput_ratio": side[first]["throughput"] / side[second]["throughput"],
                "p50_ratio": side[first]["p50_us"] / side[second]["p50_us"],
            })  # fmt: skip
    return rows


def one_round(perf: Any, server: TritonServer, round_: int, window: float, points_file: Path | None) -> list[dict]:
    """Every point once, each pair's sides in the order this round takes; each point appended to ``points_file``."""
    points = []
    for first, second, concurrencies in PAIRS:
        for concurrency in concurrencies:
            for model in (first, second) if round_ % 2 == 0 else (second, first):
                try:
                    point = measure(perf, model, server.grpc_url, "grpc", {}, concurrency, window)
                except RuntimeError as exc:  # a model that did not load, or perf_analyzer failing on it: its point
                    print(f"round {round_} c={concurrency} {model}: no point: {exc}", flush=True)
                    continue
                point = {"model": model, "concurrency": concurrency, "round": round_, **point}
                points.append(point)
                if points_file is not None:
                    with points_file.open("a") as out:
                        out.write(json.dumps(point) + "\n")
                print(f"round {round_} c={concurrency} {model}: {point['throughput']:.0f}/s "
                      f"p50 {point['p50_us']:.0f} us", flush=True)  # fmt: skip
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--points", type=Path, help="a JSON line per point, appended as each is measured")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=float, default=0.5)
    parser.add_argument("--budget-s", type=float, default=150.0, help="start no round past what this leaves")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="repogen-gpu-bench-") as tmp:
        repo = Path(tmp) / "repo"
        build(repo)
        print(f"built {repo} in {time.monotonic() - started:.0f} s", flush=True)
        card = "\n".join(gpu_names())
        if not card:
            print("no NVIDIA GPU on this machine (nvidia-smi lists none): the benchmark stops here, before serving")
            return NO_GPU
        venv = venv_info(os.environ["REPOGEN_GPU_SERVER_VENV"])
        result: dict[str, Any] = {
            "card": card, "tritonserver": "2.51.0", "server_python": venv.python_version, "protocol": "grpc",
            "window_s": args.window, "rounds": 0, "points": [], "summary": [], "gpu_memory_mib": {},
        }  # fmt: skip
        # A model that fails to load loses its own points only: the server stays up and ready without it.
        lenient = ["--exit-on-error=false", "--strict-readiness=false"]
        extra = ["--model-control-mode=explicit", "--load-model=*", *lenient, *POOL]
        server = TritonServer(repo, ensure_server("2.51.0"), venv, log_path=Path(tmp) / "tritonserver.log",
                              extra_args=extra)  # fmt: skip
        perf = ensure_perf_analyzer()
        server.start()
        record_server(server, "bench")
        try:
            server.wait_ready(120)
            last = 0.0
            for round_ in range(args.rounds):
                if time.monotonic() - started + last + MEMORY_RESERVE_S > args.budget_s:
                    print(f"round {round_} left out: the budget of {args.budget_s:.0f} s would not hold it")
                    break
                begun = time.monotonic()
                result["points"] += one_round(perf, server, round_, args.window, args.points)
                last = time.monotonic() - begun
                result.update(rounds=round_ + 1, summary=summarize(result["points"]))
                args.out.write_text(json.dumps(result, indent=2) + "\n")
            result["gpu_memory_mib"] = instance_memory(server, STUBS)
        finally:
            shutil.copy(Path(tmp) / "tritonserver.log", args.out.with_suffix(".server.log"))
            server.stop()
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for row in result["summary"]:
        first, second = row["pair"]
        print(f"{first} / {second} at c={row['concurrency']}: throughput {row['throughput_ratio']:.3f}, "
              f"p50 {row['p50_ratio']:.3f} ({row[first]['rounds']} rounds)")  # fmt: skip
    print("GPU memory per instance (MiB):", result["gpu_memory_mib"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
