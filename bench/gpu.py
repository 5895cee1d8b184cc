"""The GPU benchmark: generated KIND_GPU models against two hand-written twins each, and a two-step ensemble whose
4 MB tensor stays on the GPU against the same steps through host memory. Run on a GPU machine (tests/gpu/device.sh).

Three workloads (bench/apps/gpu_app.py), each at c=1, 8 and 32: a 256-wide torch ``Linear`` (``GpuTorch``), an
image model's tensors (``GpuImage``: a batch of 3x224x224 FP32 in, 1000 scores out) and token streaming from a
GPU model (``GpuTokens``: decoupled, 64 tokens a request). Each generated model runs against ``<Model>NV``, the
same work written as NVIDIA's own PyTorch handler writes it (each request's tensors moved on their own, each
output slice sent with ``pb_utils.Tensor.from_dlpack``), and ``<Model>BP``, as a careful hand writes it (host
join into pinned memory, one non-blocking copy in, one copy per output out into pinned memory, one wait, numpy
views). Both twins get the generated model's own config (only the name differs); tests/unit/bench/test_gpu_twins.py
holds all three to the same answers. Also measured: ``TwoStepGpu``/``TwoStepHost`` at c=1, and, for reference,
``GpuNumpy`` (numpy in and out) against ``GpuNumpyHW`` at c=8.

The goals (issue 52, item 4), each on the median over rounds of the ratio taken within a round: generated >= 1.0x
NV at every point; >= 1.2x NV at c=8 (every workload's outputs go to network clients); >= 0.97x BP at every
point; TwoStepGpu >= 1.5x TwoStepHost; GPU memory of an instance, generated <= 1.05x NV. Throughput is
perf_analyzer's inferences/s, for the token streams its responses/s (``--streaming``, as bench/streaming.py
measures; the time to first response from its profile export is kept beside it).

One tritonserver (2.51.0, the wheel's CUDA build) from the GPU suite's server Python (``REPOGEN_GPU_SERVER_VENV``:
numpy 1.26.4 and torch) serves every model; perf_analyzer over gRPC, closed loop. Each round measures every point
once, a point's models in an order that rotates from round to round. Made to be cut short: each point is a JSON
line in ``--points`` as it is measured, the figures and goals are rewritten to ``--out`` after every group of
points, and no group (a workload at one concurrency: its three models) starts that ``--budget-s`` cannot hold,
judged by what that group took last round (a smaller group after it may still fit); each figure says how many
rounds it has. Rounds go on until ``--rounds`` or until one measures nothing.

GPU memory per instance is what the device's used memory drops by when that model (one instance) is unloaded,
read with ``nvidia-smi --query-gpu``: the device's own figure, which holds inside a container, where nvidia-smi's
per-process pids are the host's and match none of the container's.

    python bench/gpu.py --out gpu-bench.json [--points points.jsonl] [--rounds 8] [--window 0.5] [--budget-s 310]
    python bench/gpu.py --table gpu-bench.json    # a result's goals and points as Markdown, for docs/benchmarks.md

Without a GPU it builds the repository and stops at its GPU check, saying so, with exit status 3.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
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
import perf  # noqa: E402  (bench/perf.py)
from stats import spread  # noqa: E402
from streaming import first_responses  # noqa: E402

APP = "bench/apps/gpu_app.py:models"
CONCURRENCIES = (1, 8, 32)
ROLES = ("generated", "NV", "BP")
# workload -> its generated model, NVIDIA's idiom, best practice, and whether it streams (decoupled)
WORKLOADS = {
    "linear-256": ("GpuTorch", "GpuTorchNV", "GpuTorchBP", False),
    "image-3x224x224": ("GpuImage", "GpuImageNV", "GpuImageBP", False),
    "tokens-64": ("GpuTokens", "GpuTokensNV", "GpuTokensBP", True),
}
# pairs outside the three workloads: (name, first, second, concurrencies, goal on first/second or None)
PAIRS = (
    ("ensemble-4MB", "TwoStepGpu", "TwoStepHost", (1,), 1.5),
    ("numpy-linear-256", "GpuNumpy", "GpuNumpyHW", (8,), None),
)  # fmt: skip
TWIN_OF = {twin: models[0] for models in WORKLOADS.values() for twin in models[1:3]} | {"GpuNumpyHW": "GpuNumpy"}
GOAL_NV, GOAL_NV_C8, GOAL_BP, GOAL_MEMORY = 1.0, 1.2, 0.97, 1.05
NO_GPU = 3  # the exit status without a GPU (the CPU rehearsal expects it)
# The ensembles' 4 MB tensors, a batch of them in flight per step: more than Triton's default 64 MB CUDA pool.
POOL = ["--cuda-memory-pool-byte-size=0:536870912"]
MEMORY_MODELS = tuple(model for models in WORKLOADS.values() for model in models[:2])  # the goal's: generated, NV
MEMORY_RESERVE_S = 20  # what reading the memory of MEMORY_MODELS takes at the end (~3 s a model)
FIRST_GUESS_S = 6.0  # a point's time before one was measured: perf_analyzer's windows and its start


def build(out: Path) -> None:
    command = [sys.executable, "-m", "repogen", "build", APP, "-o", str(out), *build_arguments()]
    subprocess.run(command, cwd=BENCH.parent, check=True)
    for handwritten, generated in TWIN_OF.items():
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


def groups() -> list[tuple[str, int, tuple[str, ...], bool]]:
    """Every group of points a round measures, in the order it does: (workload or pair, c, models, streaming).
    The goals' workloads first, the ensembles, then the reference pair: a budget that cuts a round cuts those last."""
    found = [(name, c, models[:3], models[3]) for name, models in WORKLOADS.items() for c in CONCURRENCIES]
    found += [(name, c, (first, second), False) for name, first, second, cs, _ in PAIRS for c in cs]
    return found


def measure(analyzer: Any, server: TritonServer, model: str, concurrency: int, window: float, streams: bool) -> dict:
    """One point; a token stream's with responses/s as its ``rate`` and its time to first response."""
    if not streams:
        figures = perf.measure(analyzer, model, server.grpc_url, "grpc", {}, concurrency, window)
        return figures | {"rate": figures["throughput"]}
    with tempfile.TemporaryDirectory(prefix="repogen-gpu-stream-") as tmp:
        profile = Path(tmp) / "profile.json"
        figures = perf.measure(analyzer, model, server.grpc_url, "grpc", {}, concurrency, window, streaming=True,
                               profile=profile)  # fmt: skip
        figures |= first_responses(json.loads(profile.read_text()))
    return figures | {"rate": figures["response_throughput"]}


def ratios(points: list[dict[str, Any]], group: str, concurrency: int, num: str, den: str, metric: str) -> dict | None:
    """``num``/``den`` of ``metric`` in each round that measured both at this point, summarized."""
    by_round: dict[int, dict[str, float]] = {}
    for p in points:
        if p["group"] == group and p["concurrency"] == concurrency and metric in p:
            by_round.setdefault(p["round"], {})[p["model"]] = p[metric]
    found = [r[num] / r[den] for r in by_round.values() if num in r and den in r and r[den] > 0]
    return spread(found) if found else None


def summarize(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group and concurrency: each model's median rate, p50 and rounds, and the ratios round by round."""
    rows = []
    for group, concurrency, models, streams in groups():
        mine = {m: [p for p in points if p["group"] == group and p["concurrency"] == concurrency and p["model"] == m]
                for m in models}  # fmt: skip
        row: dict[str, Any] = {"group": group, "concurrency": concurrency, "streaming": streams,
                               "metric": "responses/s" if streams else "inferences/s", "models": {}}  # fmt: skip
        for model, found in mine.items():
            if found:
                row["models"][model] = {
                    "rounds": len(found), "rate": spread([p["rate"] for p in found]),
                    "p50_us": spread([p["p50_us"] for p in found]),
                    **({"ttfr_p50_us": spread([p["ttfr_p50_us"] for p in found])} if streams else {}),
                }  # fmt: skip
        first = models[0]
        for other, label in zip(models[1:], ROLES[1:] if group in WORKLOADS else ("second",), strict=False):
            for metric, key in (("rate", "rate"), ("p50_us", "p50"), ("ttfr_p50_us", "ttfr_p50")):
                value = ratios(points, group, concurrency, first, other, metric)
                if value is not None:
                    row[f"{key} {first}/{other}"] = value | {"against": label}
        rows.append(row)
    return rows


def goals(summary: list[dict[str, Any]], memory: dict[str, float]) -> list[dict[str, Any]]:
    """Each goal at each of its points: the median ratio over rounds, its spread and rounds, met or not."""
    found = []

    def goal(name: str, point: str, value: dict | None, bound: float, at_least: bool = True) -> None:
        if value is None:
            found.append({"goal": name, "point": point, "met": None, "why": "not measured"})
            return
        met = value["median"] >= bound if at_least else value["median"] <= bound
        found.append({"goal": name, "point": point, "met": met, **value})

    for row in summary:
        group, c = row["group"], row["concurrency"]
        if group in WORKLOADS:
            generated, nv, bp, _ = WORKLOADS[group]
            point = f"{group} c={c} ({row['metric']})"
            goal(f"generated/NV >= {GOAL_NV}", point, row.get(f"rate {generated}/{nv}"), GOAL_NV)
            if c == 8:
                goal(f"generated/NV >= {GOAL_NV_C8} at c=8", point, row.get(f"rate {generated}/{nv}"), GOAL_NV_C8)
            goal(f"generated/BP >= {GOAL_BP}", point, row.get(f"rate {generated}/{bp}"), GOAL_BP)
        for name, first, second, _, bound in PAIRS:
            if group == name and bound is not None:
                goal(f"{first}/{second} >= {bound}", f"{group} c={c}", row.get(f"rate {first}/{second}"), bound)
    for group, (generated, nv, _, _) in WORKLOADS.items():
        value = None
        if memory.get(generated) and memory.get(nv):
            ratio = memory[generated] / memory[nv]
            value = {"median": ratio, "min": ratio, "max": ratio, "n": 1}
        goal(f"GPU memory generated/NV <= {GOAL_MEMORY}", f"{group} ({generated}, {nv})", value, GOAL_MEMORY, False)
    return found


def report(result: dict[str, Any]) -> None:
    for row in result["summary"]:
        for key, value in row.items():
            if key.startswith(("rate ", "ttfr_p50 ")):  # p50 ratios are in --out
                print(f"{row['group']} c={row['concurrency']} {key}: {value['median']:.3f} "
                      f"[{value['min']:.3f}, {value['max']:.3f}] over {value['n']} rounds")  # fmt: skip
    for g in result["goals"]:
        verdict = "not measured" if g["met"] is None else "met" if g["met"] else "NOT met"
        rounds = "one reading" if "memory" in g["goal"] else f"{g.get('n')} rounds"
        figure = "" if g["met"] is None else f" {g['median']:.3f} [{g['min']:.3f}, {g['max']:.3f}] ({rounds})"
        print(f"goal {g['goal']} at {g['point']}:{figure} {verdict}")
    print("GPU memory per instance (MiB):", result["gpu_memory_mib"])


def _figure(value: dict[str, Any] | None, digits: int = 3) -> str:
    if value is None:
        return "not measured"
    return f"{value['median']:.{digits}f} [{value['min']:.{digits}f}, {value['max']:.{digits}f}] ({value['n']})"


def table(result: dict[str, Any]) -> str:
    """A result's goals, then every point's rates, as Markdown: median [min, max] (rounds)."""
    lines = [f"{result['card']}, tritonserver {result['tritonserver']}, server Python {result['server_python']}, "
             f"{result['protocol']}, {result['window_s']} s windows, {result['rounds']} rounds begun.", "",
             "| goal | point | median [min, max] (rounds) | met |", "|---|---|---|---|"]  # fmt: skip
    for g in result["goals"]:
        verdict = "not measured" if g["met"] is None else "yes" if g["met"] else "**no**"
        figure = "" if g["met"] is None else _figure(g)
        lines.append(f"| {g['goal']} | {g['point']} | {figure} | {verdict} |")
    lines += ["", "| point | model | rate/s | p50 µs | first response p50 µs |", "|---|---|---|---|---|"]
    for row in result["summary"]:
        for model, figures in row["models"].items():
            first = _figure(figures.get("ttfr_p50_us"), 0) if row["streaming"] else ""
            lines.append(f"| {row['group']} c={row['concurrency']} ({row['metric']}) | {model} | "
                         f"{_figure(figures['rate'], 0)} | {_figure(figures['p50_us'], 0)} | {first} |")  # fmt: skip
    memory = ", ".join(f"{model} {mib:.0f}" for model, mib in result["gpu_memory_mib"].items())
    lines += ["", f"GPU memory per instance (MiB): {memory or 'not read'}."]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--table", type=Path, help="print this result's goals and points as Markdown, and stop")
    parser.add_argument("--points", type=Path, help="a JSON line per point, appended as each is measured")
    parser.add_argument("--rounds", type=int, default=8, help="at most; the budget decides how many fit")
    parser.add_argument("--window", type=float, default=0.5)
    parser.add_argument("--budget-s", type=float, default=310.0, help="start no group past what this leaves")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.table is not None:
        print(table(json.loads(args.table.read_text())))
        return 0
    if args.out is None:
        parser.error("--out is required to measure")
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
            "window_s": args.window, "rounds": 0, "points": [], "summary": [], "goals": [], "gpu_memory_mib": {},
        }  # fmt: skip
        # A model that fails to load loses its own points only: the server stays up and ready without it.
        lenient = ["--exit-on-error=false", "--strict-readiness=false"]
        extra = ["--model-control-mode=explicit", "--load-model=*", *lenient, *POOL]
        server = TritonServer(repo, ensure_server("2.51.0"), venv, log_path=Path(tmp) / "tritonserver.log",
                              extra_args=extra)  # fmt: skip
        analyzer = ensure_perf_analyzer()
        server.start()
        record_server(server, "bench")
        try:
            server.wait_ready(120)
            print(f"serving after {time.monotonic() - started:.0f} s", flush=True)
            _rounds(args, _Run(server, analyzer, result, started))
            result["gpu_memory_mib"] = instance_memory(server, MEMORY_MODELS)
            result["goals"] = goals(result["summary"], result["gpu_memory_mib"])
        finally:
            shutil.copy(Path(tmp) / "tritonserver.log", args.out.with_suffix(".server.log"))
            server.stop()
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    report(result)
    return 0


@dataclasses.dataclass
class _Run:
    """One measuring run: its server, perf_analyzer, the result it fills, when it started, what each group took."""

    server: Any
    analyzer: Any
    result: dict[str, Any]
    started: float
    took: dict[tuple[str, int], float] = dataclasses.field(default_factory=dict)


def _rounds(args: argparse.Namespace, run: _Run) -> None:
    """Round after round, as many as the budget holds: a round that cannot hold a group is the last."""
    for round_ in range(args.rounds):
        left_out = _round(args, run, round_)
        if left_out:
            print(f"round {round_} left out {', '.join(left_out)}: the budget of {args.budget_s:.0f} s would "
                  "not hold them", flush=True)  # fmt: skip
        if len(left_out) == len(groups()):
            break
        run.result["rounds"] = round_ + 1  # rounds begun; each point's own count is in the summary
        print(f"round {round_} ended after {time.monotonic() - run.started:.0f} s", flush=True)
        if left_out:
            break


def _round(args: argparse.Namespace, run: _Run, round_: int) -> list[str]:
    """Every group the budget still holds, measured once; the groups it left out."""
    left_out = []
    for group, concurrency, models, streams in groups():
        guess = run.took.get((group, concurrency), FIRST_GUESS_S * len(models))
        if time.monotonic() - run.started + guess + MEMORY_RESERVE_S > args.budget_s:
            left_out.append(f"{group} c={concurrency}")
            continue
        begun = time.monotonic()
        turn = round_ % len(models)
        for model in models[turn:] + models[:turn]:
            _point(args, run, round_, (group, concurrency, model, streams))
        run.took[(group, concurrency)] = time.monotonic() - begun
        run.result["summary"] = summarize(run.result["points"])
        run.result["goals"] = goals(run.result["summary"], {})
        args.out.write_text(json.dumps(run.result, indent=2) + "\n")
    return left_out


def _point(args: argparse.Namespace, run: _Run, round_: int, where: tuple[str, int, str, Any]) -> None:
    """One model's point of a group, recorded (and appended to ``--points``); a model that fails loses it alone."""
    group, concurrency, model, streams = where
    try:
        point = measure(run.analyzer, run.server, model, concurrency, args.window, streams)
    except RuntimeError as exc:  # a model that did not load, or perf_analyzer failing on it
        print(f"round {round_} {group} c={concurrency} {model}: no point: {exc}", flush=True)
        return
    point = {"group": group, "model": model, "concurrency": concurrency, "round": round_, **point}
    run.result["points"].append(point)
    if args.points is not None:
        with args.points.open("a") as out:
            out.write(json.dumps(point) + "\n")
    print(f"round {round_} {group} c={concurrency} {model}: {point['rate']:.0f}/s "
          f"p50 {point['p50_us']:.0f} us", flush=True)  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
