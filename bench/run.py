"""`make bench`: repogen vs a hand-written model.py vs PyTriton 0.7, in one run on one binary.

Serves, side by side on the same tritonserver 2.51.0 binary: (a) the repogen-generated model,
(b) a hand-written python-backend model with the same config.pbtxt, (c) PyTriton 0.7.0 serving the
same function from its own venv. Every point is measured by a fresh closed-loop client process
(bench/loadgen.py), implementations interleaved round by round with a rotating order so drift on a
shared machine hits all of them alike. Then the extra benchmarks (instances, ensemble, BLS, build
time, start-up). Writes bench/results/<date>.json; bench/report.py turns it into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import builds
import ceiling
import stats
from repos import assemble
from servers import PyTritonServer, repogen_server

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
MB4 = 1 << 20  # float32 elements in 4 MiB

PAYLOADS = {"16 floats": 16, "4 MB": MB4}
PROTOCOLS = ("grpc", "http")
CONCURRENCY = (1, 4, 16)
IMPLS = ("generated", "handwritten", "pytriton")
# (group, model, impl label, concurrency): 16 floats over gRPC, all on the repogen server.
EXTRAS = (
    ("instances", "Cpu1", "1 instance", 2),
    ("instances", "Cpu2", "2 instances", 2),
    ("ensemble", "Fused", "fused", 1),
    ("ensemble", "Pipeline", "ensemble", 1),
    ("bls", "Trivial", "direct", 1),
    ("bls", "BlsTrivial", "via BLS", 1),
)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), platform.processor(),
    )  # fmt: skip
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return {
        "nproc": int(nproc), "cpu": cpu, "memory_gib": round(mem_kb / 2**20, 1), "kernel": platform.release(),
        "python": platform.python_version(), "tritonserver": "2.51.0 (nvidia-pytriton 0.7.0 wheel)",
        "tritonclient": metadata.version("tritonclient"), "numpy_client": metadata.version("numpy"),
        "numpy_server": "1.26.4 (repogen server venv); <2 (PyTriton venv)",
    }  # fmt: skip


def measure(protocol: str, url: str, model: str, elements: int, concurrency: int, window: float) -> dict[str, Any]:
    """One point in a fresh client process."""
    cmd = [
        sys.executable, str(BENCH / "loadgen.py"), "--protocol", protocol, "--url", url, "--model", model,
        "--elements", str(elements), "--concurrency", str(concurrency), "--duration", str(window),
        "--warmup", str(min(0.5, window / 3)),
    ]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=window * 10 + 60)
    if out.returncode != 0:
        raise RuntimeError(f"load generator failed for {model} ({protocol}):\n{out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def run_rounds(servers: dict[str, Any], rounds: int, window: float, protocols: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every point for every implementation, ``rounds`` times, interleaved with a rotating order."""
    samples = []
    targets = {"generated": (servers["repogen"], "Double"), "handwritten": (servers["repogen"], "DoubleHW"),
               "pytriton": (servers["pytriton"], "Double")}  # fmt: skip
    for rnd in range(rounds):
        order = IMPLS[rnd % len(IMPLS) :] + IMPLS[: rnd % len(IMPLS)]
        for payload, elements in PAYLOADS.items():
            for protocol in protocols:
                for concurrency in CONCURRENCY:
                    for impl in order:
                        server, model = targets[impl]
                        url = server.grpc_url if protocol == "grpc" else server.http_url
                        point = measure(protocol, url, model, elements, concurrency, window)
                        samples.append({"group": "payload", "payload": payload, "impl": impl, "model": model,
                                        "protocol": protocol, "elements": elements, "concurrency": concurrency,
                                        "round": rnd, **point})  # fmt: skip
                        _progress(samples[-1])
        extras = EXTRAS if rnd % 2 == 0 else tuple(reversed(EXTRAS))
        for group, model, impl, concurrency in extras:
            point = measure("grpc", servers["repogen"].grpc_url, model, 16, concurrency, window)
            samples.append({"group": group, "payload": "16 floats", "impl": impl, "model": model, "protocol": "grpc",
                            "elements": 16, "concurrency": concurrency, "round": rnd, **point})  # fmt: skip
            _progress(samples[-1])
        for procs, impl in ((1, "1 process"), (2, "2 processes")):
            rate = ceiling.spins_per_s(procs, window)
            samples.append({"group": "ceiling", "payload": "-", "impl": impl, "model": "spin", "protocol": "none",
                            "elements": 0, "concurrency": procs, "round": rnd, "throughput": rate,
                            "p50_ms": 1e3 * procs / rate, "p99_ms": float("nan"), "mean_ms": float("nan"),
                            "count": 0, "errors": 0})  # fmt: skip
            _progress(samples[-1])
    return samples


def _progress(s: dict[str, Any]) -> None:
    print(
        f"  r{s['round']} {s['group']:9} {s['protocol']:4} {s['payload']:9} c={s['concurrency']:<2} {s['impl']:12} "
        f"{s['throughput']:8.1f}/s p50 {s['p50_ms']:7.2f} ms p99 {s['p99_ms']:7.2f} ms",
        flush=True,
    )


def build_and_startup(work: Path, reps: int) -> dict[str, Any]:
    """Build time for 10 and 100 models (library and CLI) and start-up to READY for 20 models."""
    out: dict[str, Any] = {}
    for models in (10, 100):
        lib = [builds.build_library_s(models, work / f"build-{models}") for _ in range(reps)]
        cli = [builds.build_cli_s(models, work / f"build-{models}") for _ in range(reps)]
        out[f"build_{models}"] = {"library_s": stats.spread(lib), "cli_s": stats.spread(cli)}
        print(f"  build {models:3} models: library {lib}  cli {cli}", flush=True)
    start = [builds.startup_s(20, work) for _ in range(reps)]
    out["startup_20"] = {"ready_s": stats.spread(start)}
    print(f"  start-up 20 models to READY: {start}", flush=True)
    return out


def ratios(samples: list[dict[str, Any]], protocols: tuple[str, ...]) -> list[dict[str, Any]]:
    """The issue's goal ratios, each computed per round."""
    rows: list[dict[str, Any]] = []

    def add(name: str, key: tuple[Any, ...], num: str, den: str, metric: str, goal: str) -> None:
        value = stats.round_ratio(samples, key, num, den, metric)
        if value is not None:
            rows.append({"name": name, "goal": goal, **value})

    for payload, elements in PAYLOADS.items():
        for protocol in protocols:
            for c in CONCURRENCY:
                key = ("payload", protocol, elements, c)
                where = f"{payload}, {protocol}, c={c}"
                add(f"generated/hand-written throughput ({where})", key, "generated", "handwritten", "throughput",
                    ">= 0.95")  # fmt: skip
                add(f"generated/hand-written p50 ({where})", key, "generated", "handwritten", "p50_ms", "<= 1.1")
    for protocol in protocols:
        for c in (1, 16):
            add(f"generated/PyTriton throughput (16 floats, {protocol}, c={c})", ("payload", protocol, 16, c),
                "generated", "pytriton", "throughput", ">= 2.5")  # fmt: skip
    add("2 instances / 1 instance throughput (CPU-bound, c=2)", ("instances", "grpc", 16, 2), "2 instances",
        "1 instance", "throughput", ">= 1.8")  # fmt: skip
    by_round: dict[int, dict[str, float]] = {}
    for s in samples:
        if s["group"] == "ceiling":
            by_round.setdefault(s["round"], {})[s["impl"]] = s["throughput"]
    parallel = [r["2 processes"] / r["1 process"] for r in by_round.values() if len(r) == 2]
    if parallel:
        rows.append({"name": "machine ceiling: 2 / 1 plain processes (same spin, no Triton)", "goal": "reference",
                     **stats.spread(parallel)})  # fmt: skip
    add("ensemble / fused p50 latency (3 steps, c=1)", ("ensemble", "grpc", 16, 1), "ensemble", "fused", "p50_ms",
        "<= 1.2")  # fmt: skip
    add("BLS / direct p50 latency (c=1)", ("bls", "grpc", 16, 1), "via BLS", "direct", "p50_ms", "none")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s windows, gRPC only: a smoke run")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--window", type=float, default=None, help="seconds measured per point")
    parser.add_argument("--output", type=Path, default=None, help="default: bench/results/<date>[-quick].json")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    window = args.window or (1.0 if args.quick else 2.5)
    protocols = ("grpc",) if args.quick else PROTOCOLS
    work = ROOT / "build" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()

    print("building the benchmark repository", flush=True)
    repository = assemble(work)
    servers: dict[str, Any] = {}
    try:
        servers["repogen"] = repogen_server(repository, work / "tritonserver.log").start().wait_ready(timeout=300)
        servers["pytriton"] = PyTritonServer(work / "pytriton.log").start()
        print(f"measuring: {rounds} round(s) x {window:.0f} s windows, protocols {protocols}", flush=True)
        samples = run_rounds(servers, rounds, window, protocols)
    finally:
        for server in servers.values():
            server.stop()
    print("build time and start-up", flush=True)
    extras = build_and_startup(work, reps=1 if args.quick else 3)

    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "rounds": rounds, "window_s": window, "protocols": list(protocols),
        "machine": machine(), "samples": samples, "summary": stats.summarize(samples),
        "ratios": ratios(samples, protocols), **extras,
        "duration_s": round(time.monotonic() - began, 1),
    }  # fmt: skip
    output = args.output or BENCH / "results" / f"{dt.date.today().isoformat()}{'-quick' if args.quick else ''}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {output} in {result['duration_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
