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
``GpuNumpy`` (numpy in and out) against ``GpuNumpyHW`` at c=8, and ``GpuTokensHost`` (the token stream, each token
taken to host memory by the callable) against ``GpuTokensBP`` at c=1: where the generated stream's time goes.

The goals (issue 52, item 4), each on the median over rounds of the ratio taken within a round: generated >= 1.0x
NV at every point; >= 1.2x NV at c=8 (every workload's outputs go to network clients); >= 0.97x BP at every
point; TwoStepGpu >= 1.5x TwoStepHost; GPU memory of an instance, generated <= 1.05x NV. Throughput is
perf_analyzer's inferences/s, for the token streams its responses/s (``--streaming``, as bench/streaming.py
measures, in windows long enough for about 50 streams: ``STREAM_WINDOW_S``; the time to first response from its
profile export is kept beside it).

One tritonserver (2.51.0, the wheel's CUDA build) from the GPU suite's server Python (``REPOGEN_GPU_SERVER_VENV``:
numpy 1.26.4 and torch) serves every model; perf_analyzer over gRPC, closed loop. Every model is warmed up once,
unrecorded, before the first round. Each round measures every point once, a point's models in an order that
rotates from round to round; past ``MIN_ROUNDS`` rounds, only the points whose ratios still straddle a goal
(``open_groups``). Made to be cut short: each point is a JSON line in ``--points`` as it is measured, the figures
and goals are rewritten to ``--out`` after every group of points, and no group (a workload at one concurrency: its
three models) starts that ``--budget-s`` cannot hold, judged by what that group took last round (a smaller group
after it may still fit); each figure says how many rounds it has. Rounds go on until ``--rounds``, until one
measures nothing, or until every point is settled.

GPU memory per instance is its peak under load (bench/gpu_memory.py): what unloading it frees at the end, plus the
most any of its points took and gave back, from the device's own figure sampled through the run.

    python bench/gpu.py --out gpu-bench.json [--points points.jsonl] [--rounds 12] [--window 0.5] [--budget-s 310]
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
from gpu_memory import Sampler, at_rest, peaks, transient_mib  # noqa: E402
from gpu_report import report, table  # noqa: E402
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
    ("tokens-host-64", "GpuTokensHost", "GpuTokensBP", (1,), None),
)  # fmt: skip
STREAMING = frozenset(models[0] for models in WORKLOADS.values() if models[3]) | {"GpuTokensHost"}  # decoupled
TWIN_OF = {twin: models[0] for models in WORKLOADS.values() for twin in models[1:3]} | {"GpuNumpyHW": "GpuNumpy"}
GOAL_NV, GOAL_NV_C8, GOAL_BP, GOAL_MEMORY = 1.0, 1.2, 0.97, 1.05
NO_GPU = 3  # the exit status without a GPU (the CPU rehearsal expects it)
# The ensembles' 4 MB tensors, a batch of them in flight per step: more than Triton's default 64 MB CUDA pool.
POOL = ["--cuda-memory-pool-byte-size=0:536870912"]
MEMORY_MODELS = tuple(model for models in WORKLOADS.values() for model in models[:3])  # generated, NV and BP
MEMORY_RESERVE_S = 27  # what reading the memory of MEMORY_MODELS at rest takes at the end (~1-3 s a model)
# Stopping the server: the models left unloaded at once, then tritonserver's exit, which waits for open connections
# as long as --exit-timeout-secs (2026-11-30: the default 30 s ran the benchmark 20 s past its budget)
STOP_RESERVE_S, EXIT_TIMEOUT_S = 12, 5
# A token stream's window by concurrency: 64 tokens make a stream of 20-40 ms at c=1 and 0.5-0.8 s at c=32 (H200,
# 2026-11-30), so a 0.5 s window held a few dozen streams, its rate moved in steps of one stream, and perf_analyzer
# found no stable three windows in eight at c=8 and c=32; these hold about 50 streams or more.
STREAM_WINDOW_S = {1: 1.0, 8: 1.0, 32: 2.0}
FIRST_GUESS_S = 6.0  # a point's time before one was measured: perf_analyzer's windows and its start
MIN_ROUNDS = 3  # every group's, before rounds go on with only the groups whose goals their spread leaves open
WARM_C, WARM_WINDOW_S = 8, 0.25  # each model's warm-up: CUDA's lazy loading, torch's first kernels, the allocator


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


def groups() -> list[tuple[str, int, tuple[str, ...], bool]]:
    """Every group of points a round measures, in the order it does: (workload or pair, c, models, streaming).
    The goals' workloads first, the ensembles, then the reference pair: a budget that cuts a round cuts those last."""
    found = [(name, c, models[:3], models[3]) for name, models in WORKLOADS.items() for c in CONCURRENCIES]
    found += [(name, c, (first, second), first in STREAMING) for name, first, second, cs, _ in PAIRS for c in cs]
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


def goals(summary: list[dict[str, Any]], memory: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """Each goal at each of its points: the median ratio over rounds, its spread and rounds, met or not."""
    found = []

    def goal(name: str, point: str, value: dict | None, bound: float, at_least: bool = True, **where: Any) -> None:
        if value is None:
            found.append({"goal": name, "point": point, "met": None, "why": "not measured", "bound": bound, **where})
            return
        met = value["median"] >= bound if at_least else value["median"] <= bound
        found.append({"goal": name, "point": point, "met": met, **value, "bound": bound, **where})

    for row in summary:
        group, c = row["group"], row["concurrency"]
        where = {"group": group, "concurrency": c}
        if group in WORKLOADS:
            generated, nv, bp, _ = WORKLOADS[group]
            point = f"{group} c={c} ({row['metric']})"
            goal(f"generated/NV >= {GOAL_NV}", point, row.get(f"rate {generated}/{nv}"), GOAL_NV, **where)
            if c == 8:
                goal(f"generated/NV >= {GOAL_NV_C8} at c=8", point, row.get(f"rate {generated}/{nv}"), GOAL_NV_C8,
                     **where)  # fmt: skip
            goal(f"generated/BP >= {GOAL_BP}", point, row.get(f"rate {generated}/{bp}"), GOAL_BP, **where)
        for name, first, second, _, bound in PAIRS:
            if group == name and bound is not None:
                goal(f"{first}/{second} >= {bound}", f"{group} c={c}", row.get(f"rate {first}/{second}"), bound,
                     **where)  # fmt: skip
    for group, (generated, nv, _, _) in WORKLOADS.items():
        value = None
        if memory.get(generated) and memory.get(nv):
            ratio = memory[generated]["peak"] / memory[nv]["peak"]
            value = {"median": ratio, "min": ratio, "max": ratio, "n": 1}
        goal(f"GPU memory (peak under load) generated/NV <= {GOAL_MEMORY}", f"{group} ({generated}, {nv})", value,
             GOAL_MEMORY, False)  # fmt: skip
    return found


def open_groups(result: dict[str, Any]) -> set[tuple[str, int]]:
    """The groups a round past ``MIN_ROUNDS`` still measures: those with fewer rounds, and those with a goal whose
    ratios over the rounds fall on both sides of its bound (c=1's run-to-run noise, +-0.1 on the H200, lands there).
    A group whose every ratio is on one side of each of its goals is settled: more rounds would not change a verdict."""
    found = set()
    for row in result["summary"]:
        counts = [m["rounds"] for m in row["models"].values()]
        if len(counts) < 2 or min(counts) < MIN_ROUNDS:
            found.add((row["group"], row["concurrency"]))
    for g in result["goals"]:
        if "concurrency" in g and g["met"] is not None and g["min"] < g["bound"] <= g["max"]:
            found.add((g["group"], g["concurrency"]))
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--table", type=Path, help="print this result's goals and points as Markdown, and stop")
    parser.add_argument("--points", type=Path, help="a JSON line per point, appended as each is measured")
    parser.add_argument("--rounds", type=int, default=12, help="at most; the budget decides how many fit")
    parser.add_argument("--window", type=float, default=0.5)
    parser.add_argument("--budget-s", type=float, default=310.0, help="start no group past what this leaves")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.table is not None:
        print(table(json.loads(args.table.read_text()), WORKLOADS))
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
            "window_s": args.window, "stream_window_s": STREAM_WINDOW_S, "rounds": 0, "points": [], "summary": [],
            "goals": [], "gpu_memory_mib": {},
        }  # fmt: skip
        # A model that fails to load loses its own points only: the server stays up and ready without it.
        lenient = ["--exit-on-error=false", "--strict-readiness=false"]
        extra = ["--model-control-mode=explicit", "--load-model=*", *lenient, *POOL,
                 f"--exit-timeout-secs={EXIT_TIMEOUT_S}"]  # fmt: skip
        server = TritonServer(repo, ensure_server("2.51.0"), venv, log_path=Path(tmp) / "tritonserver.log",
                              extra_args=extra)  # fmt: skip
        analyzer = ensure_perf_analyzer()
        server.start()
        record_server(server, "bench")
        try:
            server.wait_ready(120)
            print(f"serving after {time.monotonic() - started:.0f} s", flush=True)
            with Sampler() as sampler:
                run = _Run(server, analyzer, result, started)
                warm_up(run)
                _rounds(args, run)
            for point in result["points"]:  # what each point took and gave back, from the readings around it
                begun, ended = (started + at for at in point["span_s"])
                point["gpu_transient_mib"] = transient_mib(sampler.readings, begun, ended)
            result["gpu_memory_mib"] = peaks(at_rest(server, MEMORY_MODELS), result["points"])
            result["goals"] = goals(result["summary"], result["gpu_memory_mib"])
            args.out.write_text(json.dumps(result, indent=2) + "\n")  # before the server stops, should that hang
            report(result, WORKLOADS)
        finally:
            server.stop(timeout=STOP_RESERVE_S, unload_first=True)
            shutil.copy(Path(tmp) / "tritonserver.log", args.out.with_suffix(".server.log"))
    print(f"stopped after {time.monotonic() - started:.0f} s", flush=True)
    return 0


@dataclasses.dataclass
class _Run:
    """One measuring run: its server, perf_analyzer, the result it fills, when it started, what each group took."""

    server: Any
    analyzer: Any
    result: dict[str, Any]
    started: float
    took: dict[tuple[str, int], float] = dataclasses.field(default_factory=dict)


def warm_up(run: _Run) -> None:
    """Each model once, unrecorded, before the first round: a model's first batches pay CUDA's lazy module loading,
    torch's first kernels and its allocator's first blocks, which round 0 would otherwise measure for whichever
    model it happens to start with."""
    begun = time.monotonic()
    for model, streams in dict.fromkeys((m, streams) for _, _, models, streams in groups() for m in models):
        try:
            figures = measure(run.analyzer, run.server, model, WARM_C, WARM_WINDOW_S, streams)
        except RuntimeError as exc:
            print(f"warm-up {model}: {exc}", flush=True)
            continue
        print(f"warm-up {model}: {figures['rate']:.0f}/s at c={WARM_C}", flush=True)
    run.result["warm_up_s"] = round(time.monotonic() - begun, 1)


def _rounds(args: argparse.Namespace, run: _Run) -> None:
    """Round after round, as many as the budget holds: a round that cannot hold a group is the last, and so is one
    that finds every group settled (``open_groups``)."""
    for round_ in range(args.rounds):
        measured, left_out = _round(args, run, round_)
        if left_out:
            print(f"round {round_} left out {', '.join(left_out)}: the budget of {args.budget_s:.0f} s would "
                  "not hold them", flush=True)  # fmt: skip
        if not measured:
            print(f"round {round_} measured nothing: {'every group settled' if not left_out else 'the budget'}",
                  flush=True)  # fmt: skip
            break
        run.result["rounds"] = round_ + 1  # rounds begun; each point's own count is in the summary
        print(f"round {round_} ended after {time.monotonic() - run.started:.0f} s, {measured} groups", flush=True)
        if left_out:
            break


def _round(args: argparse.Namespace, run: _Run, round_: int) -> tuple[int, list[str]]:
    """Every group the budget still holds, measured once (past ``MIN_ROUNDS``, only the groups still open): how
    many it measured, and the groups it left out."""
    measured, left_out = 0, []
    wanted = open_groups(run.result) if round_ >= MIN_ROUNDS else None
    for group, concurrency, models, streams in groups():
        if wanted is not None and (group, concurrency) not in wanted:
            continue
        guess = run.took.get((group, concurrency), FIRST_GUESS_S * len(models))
        if time.monotonic() - run.started + guess + MEMORY_RESERVE_S + STOP_RESERVE_S > args.budget_s:
            left_out.append(f"{group} c={concurrency}")
            continue
        begun = time.monotonic()
        turn = round_ % len(models)
        for model in models[turn:] + models[:turn]:
            _point(args, run, round_, (group, concurrency, model, streams))
        measured += 1
        run.took[(group, concurrency)] = time.monotonic() - begun
        run.result["summary"] = summarize(run.result["points"])
        run.result["goals"] = goals(run.result["summary"], {})
        args.out.write_text(json.dumps(run.result, indent=2) + "\n")
    return measured, left_out


def _point(args: argparse.Namespace, run: _Run, round_: int, where: tuple[str, int, str, Any]) -> None:
    """One model's point of a group, recorded (and appended to ``--points``); a model that fails loses it alone."""
    group, concurrency, model, streams = where
    begun = time.monotonic()
    try:
        window = max(args.window, STREAM_WINDOW_S.get(concurrency, 1.0)) if streams else args.window
        point = measure(run.analyzer, run.server, model, concurrency, window, streams)
    except RuntimeError as exc:  # a model that did not load, or perf_analyzer failing on it
        print(f"round {round_} {group} c={concurrency} {model}: no point: {exc}", flush=True)
        return
    point["span_s"] = [round(begun - run.started, 3), round(time.monotonic() - run.started, 3)]  # for the memory
    point = {"group": group, "model": model, "concurrency": concurrency, "round": round_, **point}
    run.result["points"].append(point)
    if args.points is not None:
        with args.points.open("a") as out:
            out.write(json.dumps(point) + "\n")
    print(f"round {round_} {group} c={concurrency} {model}: {point['rate']:.0f}/s "
          f"p50 {point['p50_us']:.0f} us", flush=True)  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
