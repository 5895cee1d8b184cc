"""`make bench`: repogen's generated models against hand-written ones (and PyTriton), measured with perf_analyzer.

One tritonserver 2.51.0 serving models from Python 3.10 (NGC 24.10's pairing) runs the generated
models beside hand-written model.py files doing the same work under the same config.pbtxt;
PyTriton 0.7.0 serves the same function from its own venv. Every throughput/latency point is one
perf_analyzer run, which also reports the server's queue and compute input/infer/output per
request. Implementations alternate point by point in a rotating order, round after round, and each
ratio is taken within a round. Then: the stub's instructions per request (callgrind), cold start
(20 generated vs 20 hand-written models), build time, and shipped packages (a scikit-learn model's
time to READY against the same model on a server where scikit-learn is installed; rebuild time).
Writes bench/results/<date>.json; bench/report.py turns it into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
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
import onnx_bench
import perf
import ratios
import stats
import streaming
import waiting
from instructions import COUNTED, MB4, SERVED_APART, count_instructions
from packages import packages_bench
from repos import assemble
from servers import PyTritonServer, repogen_server
from settle import settle

from repogen.server.provision.install import default_cache_dir
from repogen.server.provision.perf_analyzer import VERSION as PERF_ANALYZER_VERSION
from repogen.server.provision.perf_analyzer import ensure_perf_analyzer

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

POINTS = (("16 floats", 16, (1, 8, 16)), ("4 MB", MB4, (1, 4)))
PROTOCOLS = ("grpc", "http")
IMPLS = {"generated": ("repogen", "Double"), "handwritten": ("repogen", "DoubleHW"), "pytriton": ("pytriton", "Double")}
# (group, model, implementation, concurrency): 16 floats over gRPC, on the repogen server.
EXTRAS = (
    ("instances", "Cpu1", "1 instance", 2),
    ("instances", "Cpu2", "2 instances", 2),
    ("pipeline", "Fused", "fused (repogen)", 1),
    ("pipeline", "HWOne", "one model (hand-written)", 1),
    ("pipeline", "Pipeline", "ensemble (repogen)", 1),
    ("pipeline", "HWPipeline", "ensemble (hand-written)", 1),
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
        "server_python": "3.10 (NGC 24.10's pairing; PyTriton runs its own venv's Python)",
        "perf_analyzer": PERF_ANALYZER_VERSION, "numpy_server": "1.26.4 (repogen server venv); <2 (PyTriton venv)",
        "tritonclient": metadata.version("tritonclient"),
    }  # fmt: skip


def run_rounds(
    servers: dict[str, Any], rounds: int, window: float, protocols: tuple[str, ...], onnx: bool = False
) -> list[dict[str, Any]]:
    """Every point for every implementation, ``rounds`` times, interleaved with a rotating order."""
    analyzer = ensure_perf_analyzer()
    samples: list[dict[str, Any]] = []
    impls = tuple(i for i in IMPLS if IMPLS[i][0] in servers)

    def point(group: str, impl: str, model: str, server: Any, protocol: str, payload: str, elements: int,
              concurrency: int, rnd: int, batches: bool = False) -> None:  # fmt: skip
        """One perf_analyzer run; ``batches``: also the mean batch the server formed (its statistics)."""
        url = server.grpc_url if protocol == "grpc" else server.http_url
        before = onnx_bench.executions(server.http_url, model) if batches else (0, 0)
        measured = perf.measure(analyzer, model, url, protocol, {"x": elements}, concurrency, window)
        if impl == "pytriton":  # its processes idle before the next model is measured (bench/settle.py)
            measured["settled_s"] = round(settle(server.group), 2)
        if batches:
            after = onnx_bench.executions(server.http_url, model)
            measured["mean_batch"] = (after[0] - before[0]) / max(1, after[1] - before[1])
        samples.append({"group": group, "payload": payload, "impl": impl, "model": model, "protocol": protocol,
                        "elements": elements, "concurrency": concurrency, "round": rnd, **measured})  # fmt: skip
        _progress(samples[-1])

    for rnd in range(rounds):
        order = impls[rnd % len(impls) :] + impls[: rnd % len(impls)]
        for payload, elements, concurrencies in POINTS:
            for protocol in protocols:
                for concurrency in concurrencies:
                    for impl in order:
                        where, model = IMPLS[impl]
                        point("payload", impl, model, servers[where], protocol, payload, elements, concurrency, rnd)
        for group, model, impl, concurrency in EXTRAS if rnd % 2 == 0 else tuple(reversed(EXTRAS)):
            point(group, impl, model, servers["repogen"], "grpc", "16 floats", 16, concurrency, rnd)
        streaming_round(servers["repogen"], analyzer, rnd, window, samples)
        if onnx:
            onnx_round(point, servers["repogen"], rnd, window, samples)
        for procs, impl in ((1, "1 process"), (2, "2 processes")):
            rate = ceiling.spins_per_s(procs, window)
            samples.append({"group": "ceiling", "payload": "-", "impl": impl, "model": "spin", "protocol": "none",
                            "elements": 0, "concurrency": procs, "round": rnd, "throughput": rate,
                            "p50_us": 1e6 * procs / rate})  # fmt: skip
            _progress(samples[-1])
    return samples


def streaming_round(server: Any, analyzer: Any, rnd: int, window: float, samples: list[dict[str, Any]]) -> None:
    """The streaming points (perf_analyzer --streaming), then what a cancelled stream still costs."""

    def point(impl: str, model: str, concurrency: int) -> None:
        measured = streaming.measure(analyzer, model, server.grpc_url, concurrency, window)
        samples.append({"group": "streaming", "payload": f"{streaming.TOKENS} tokens", "impl": impl, "model": model,
                        "protocol": "grpc", "elements": streaming.TOKENS, "concurrency": concurrency, "round": rnd,
                        **measured})  # fmt: skip
        _progress(samples[-1])

    streaming.run_round(point, rnd)
    names = list(streaming.CANCEL_IMPLS)
    for impl in names[rnd % len(names) :] + names[: rnd % len(names)]:
        model = streaming.CANCEL_IMPLS[impl]
        cost = streaming.cancelled_cost(server, model)
        samples.append({"group": "cancelled stream", "payload": f"{streaming.SLOW_TOKENS} tokens", "impl": impl,
                        "model": model, "protocol": "grpc", "elements": streaming.SLOW_TOKENS, "concurrency": 1,
                        "round": rnd, **cost})  # fmt: skip
        print(f"  r{rnd} cancelled stream {impl:26} {cost['after_cancel']:6.1f} tokens after the cancel", flush=True)


def onnx_round(point: Any, server: Any, rnd: int, window: float, samples: list[dict[str, Any]]) -> None:
    """The ONNX points, implementations in a rotating order; then onnxruntime alone at the batch the server formed."""
    for group, size, impls, concurrencies in onnx_bench.POINTS:
        names = list(impls)
        order = names[rnd % len(names) :] + names[: rnd % len(names)]
        elements = onnx_bench.ELEMENTS[size]
        for concurrency in concurrencies:
            for impl in order:
                point(group, impl, impls[impl], server, "grpc", f"{elements} floats", elements, concurrency, rnd, True)
    group, concurrency = onnx_bench.CEILING_POINT
    served = next(s for s in reversed(samples) if (s["group"], s["concurrency"], s["impl"]) ==
                  (group, concurrency, "generated"))  # fmt: skip
    batch = max(1, round(served["mean_batch"]))
    threads = onnx_bench.default_threads()
    graph = server.model_repository / served["model"] / "1" / "model.onnx"
    rate = onnx_bench.ceiling(graph, batch, threads, window)
    samples.append({**{k: served[k] for k in ("group", "payload", "model", "protocol", "elements", "concurrency")},
                    "impl": "onnxruntime in one process", "round": rnd, "throughput": rate,
                    "p50_us": 1e6 * batch / rate, "mean_batch": batch, "threads": threads})  # fmt: skip
    _progress(samples[-1])


def _progress(s: dict[str, Any]) -> None:
    infer = f" infer {s['compute_infer_us']:6.0f} us" if "compute_infer_us" in s else ""
    if "ttfr_p50_us" in s:
        infer = f" {s['response_throughput']:8.1f} responses/s, first after {s['ttfr_p50_us'] / 1e3:6.3f} ms"
    print(
        f"  r{s['round']} {s['group']:9} {s['protocol']:4} {s['payload']:9} c={s['concurrency']:<2} {s['impl']:26} "
        f"{s['throughput']:8.1f}/s p50 {s['p50_us'] / 1e3:7.3f} ms{infer}",
        flush=True,
    )


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 1 s windows, gRPC only: a smoke run")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--window", type=float, default=None, help="seconds per perf_analyzer measurement window")
    parser.add_argument("--no-pytriton", action="store_true", help="leave PyTriton out (no bench/.venv-pytriton)")
    parser.add_argument("--no-onnx", action="store_true", help="leave the ONNX points out (no builder venv)")
    parser.add_argument("--output", type=Path, default=None, help="default: bench/results/<date>[-quick].json; "
                        "with --instructions, where to add the counts (none: printed only)")  # fmt: skip
    parser.add_argument(
        "--instructions", action="store_true", help="only count the stub's instructions per request (callgrind)"
    )
    parser.add_argument("--group", action="append", choices=sorted(COUNTED), help="with --instructions: only these")
    parser.add_argument("--requests", type=int, default=200, help="with --instructions: requests counted per model")
    parser.add_argument("--only", choices=("streaming", "waiting"),
                        help="only this group: bench/results/<date>-<group>.json")  # fmt: skip
    parser.add_argument("--servers", type=int, default=3, help="with --only: fresh servers the rounds share")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    window = args.window or (1.0 if args.quick else 2.0)
    protocols = ("grpc",) if args.quick else PROTOCOLS
    work = ROOT / "build" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()

    print("building the benchmark repository", flush=True)
    repository = assemble(work)
    counted_onnx = any(group.startswith("onnx") for group in args.group or COUNTED)
    wanted = not args.no_onnx and not args.only and (not args.instructions or counted_onnx)
    onnx = wanted and _onnx_models(repository, work)
    if args.instructions:  # repeatable on a busy machine: the way to prove one change to the request path
        return _instructions_only(repository, work, args.requests, args.group, args.output)
    if args.only == "streaming":
        return streaming_only(repository, work, rounds, window, args.output, began, args.servers)
    if args.only == "waiting":
        return waiting_only(repository, work, rounds, window, args.output, began, args.servers)
    servers: dict[str, Any] = {}
    try:
        servers["repogen"] = repogen_server(repository, work / "tritonserver.log").start().wait_ready(timeout=300)
        if not args.no_pytriton:
            servers["pytriton"] = PyTritonServer(work / "pytriton.log").start()
        print(f"measuring: {rounds} round(s), {window:.1f} s windows, protocols {protocols}", flush=True)
        samples = run_rounds(servers, rounds, window, protocols, onnx)
    finally:
        for server in servers.values():
            server.stop()
    instructions = _instructions_after(repository, work, args.quick)
    extras = _extras(work, args.quick)
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "rounds": rounds, "window_s": window, "protocols": list(protocols),
        "machine": machine(), "samples": samples, "summary": stats.summarize(samples),
        "ratios": ratios.ratios(samples, protocols, POINTS), "instructions_per_request": instructions, **extras,
        "duration_s": round(time.monotonic() - began, 1),
    }  # fmt: skip
    output = args.output or BENCH / "results" / f"{dt.date.today().isoformat()}{'-quick' if args.quick else ''}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {output} in {result['duration_s']} s", flush=True)
    return 0


def _onnx_models(repository: Path, work: Path) -> bool:
    """The ONNX models added to the repository (a builder venv with onnx and onnxruntime, pip the first time)."""
    try:
        print(f"  ONNX models: {', '.join(onnx_bench.add_models(repository, work))}", flush=True)
    except Exception as exc:
        print(f"  ONNX models left out ({type(exc).__name__}: {str(exc)[:300]})", flush=True)
        return False
    return True


def _instructions_only(repository: Path, work: Path, requests: int, groups: Any, output: Path | None) -> int:
    """``--instructions``: the stub's instructions per request alone; with ``--output``, the groups join those
    already in the file (one group per run when each is slow)."""
    counts = count_instructions(repository, work, requests, groups)
    print(json.dumps(counts, indent=1), flush=True)
    if output:
        output.write_text(json.dumps(with_counts(output, counts), indent=1) + "\n")
    return 0


def with_counts(output: Path, counts: dict[str, Any]) -> dict[str, Any]:
    """``output``'s results with ``counts`` joined to its counts: a full run's measurements kept as they are; a new
    file says when and where it was counted."""
    if not output.exists():
        return {"date": dt.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
                "instructions_per_request": counts}  # fmt: skip
    kept = json.loads(output.read_text())
    return {**kept, "instructions_per_request": {**kept.get("instructions_per_request", {}), **counts}}


def _instructions_after(repository: Path, work: Path, quick: bool) -> dict[str, Any]:
    print("stub instructions per request (callgrind)", flush=True)
    instructions: dict[str, Any] = {}
    for groups in SERVED_APART:  # under valgrind a stub can miss its health check: keep what the others counted
        try:
            instructions.update(count_instructions(repository, work, 50 if quick else 200, list(groups)))
        except Exception as exc:
            failure = f"{type(exc).__name__}: {str(exc)[:300]}"
            again = " ".join(f"--group '{group}'" for group in groups)
            print(f"  callgrind failed ({failure}); rerun: bench/run.py --instructions {again} --output "
                  "bench/results/<this run>.json", flush=True)  # fmt: skip
    print(f"  {instructions}", flush=True)
    return instructions


def _extras(work: Path, quick: bool) -> dict[str, Any]:
    """Cold start, build time and shipped packages; a failure here must not throw the measurements away."""
    print("cold start, build time", flush=True)
    try:
        extras = builds.cold_start_and_build(work, reps=1 if quick else 3)
    except Exception as exc:
        print(f"  cold start / build time failed: {type(exc).__name__}: {exc}", flush=True)
        extras = {"cold_start_error": f"{type(exc).__name__}: {exc}"}
    print("shipped packages: READY against pre-installed, rebuild time", flush=True)
    try:
        extras["packages"] = packages_bench(work, default_cache_dir(), reps=1 if quick else 3)
        print(f"  {extras['packages']}", flush=True)
    except Exception as exc:
        print(f"  packages failed: {type(exc).__name__}: {exc}", flush=True)
        extras["packages_error"] = f"{type(exc).__name__}: {exc}"
    return extras


def streaming_only(repository: Path, work: Path, rounds: int, window: float, output: Path | None,
                   began: float, servers: int = 1) -> int:  # fmt: skip
    """``--only streaming``: its rounds and instruction counts alone, into a result of their own.

    ``servers``: the rounds are shared among that many fresh servers, one after the other. Each model's stub
    lives as long as its server, and where it landed (cores, memory) holds for all the rounds it serves: with
    one server two runs' ratios at c=1 differed by 2 % with the same code, more than the goals' margins.
    """
    samples: list[dict[str, Any]] = []
    print(f"measuring streaming: {rounds} round(s) on {servers} server(s), {window:.1f} s windows", flush=True)
    for first, last in _shares(rounds, servers):
        server = repogen_server(repository, work / "tritonserver.log").start().wait_ready(timeout=300)
        try:
            for rnd in range(first, last):
                streaming_round(server, ensure_perf_analyzer(), rnd, window, samples)
        finally:
            server.stop()
    print("stub instructions per stream (callgrind)", flush=True)
    instructions = count_instructions(repository, work, 100, [streaming.COUNTED_GROUP])
    print(f"  {instructions}", flush=True)
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"), "mode": "streaming", "rounds": rounds,
        "servers": servers, "window_s": window, "protocols": ["grpc"], "machine": machine(), "samples": samples,
        "summary": stats.summarize(samples), "ratios": streaming.ratios(samples),
        "instructions_per_request": instructions, "duration_s": round(time.monotonic() - began, 1),
    }  # fmt: skip
    output = output or BENCH / "results" / f"{dt.date.today().isoformat()}-streaming.json"
    output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {output} in {result['duration_s']} s", flush=True)
    return 0


def waiting_only(repository: Path, work: Path, rounds: int, window: float, output: Path | None,
                 began: float, servers: int = 1) -> int:  # fmt: skip
    """``--only waiting``: the I/O-bound async callables (bench/waiting.py), into a result of their own; the rounds
    shared among ``servers`` fresh servers, as ``streaming_only`` does."""
    samples: list[dict[str, Any]] = []
    print(f"measuring waiting: {rounds} round(s) on {servers} server(s), {window:.1f} s windows", flush=True)
    for first, last in _shares(rounds, servers):
        server = repogen_server(repository, work / "tritonserver.log").start().wait_ready(timeout=300)
        try:
            for rnd in range(first, last):
                waiting.run_round(ensure_perf_analyzer(), server.grpc_url, window, rnd, samples)
        finally:
            server.stop()
    print("stub instructions per request (callgrind)", flush=True)
    try:  # under valgrind a stub can fail to start on a loaded machine: keep the measurements above
        instructions = count_instructions(repository, work, 100, list(waiting.COUNTED))
    except Exception as exc:
        groups = " ".join(f"--group '{group}'" for group in waiting.COUNTED)
        failure = f"{type(exc).__name__}: {str(exc)[:300]}"
        print(f"  callgrind failed ({failure}); rerun: bench/run.py --instructions {groups}", flush=True)
        instructions = {}
    print(f"  {instructions}", flush=True)
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"), "mode": "waiting", "rounds": rounds,
        "servers": servers, "window_s": window, "protocols": ["grpc"], "machine": machine(), "samples": samples,
        "summary": stats.summarize(samples), "ratios": waiting.ratios(samples),
        "instructions_per_request": instructions, "duration_s": round(time.monotonic() - began, 1),
    }  # fmt: skip
    output = output or BENCH / "results" / f"{dt.date.today().isoformat()}-waiting.json"
    output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {output} in {result['duration_s']} s", flush=True)
    return 0


def _shares(rounds: int, servers: int) -> list[tuple[int, int]]:
    """Rounds [first, last) for each of ``servers`` servers, as even as they go (none empty)."""
    servers = max(1, min(servers, rounds))
    bounds = [rounds * i // servers for i in range(servers + 1)]
    return list(itertools.pairwise(bounds))


if __name__ == "__main__":
    sys.exit(main())
