"""Two or more models at one point, many rounds: settles what a 3-round ``make bench`` cannot.

    .venv/bin/python bench/ab.py Double DoubleHW --rounds 8 --protocol grpc --concurrency 1

``make bench`` measures every point 3 times; on two shared cores one point's ratio then spans
±10 %, so a goal at 0.97 or 1.05 lands on either side by chance. This measures the models named
(from the benchmark repository, assembled as ``make bench`` does) at a single point, alternating
them in a rotating order within each round, and prints each model's ratio to the last one named
(for compute infer, the difference in µs), taken per round, then median and [min–max], as
``docs/benchmarks.md`` reads them. A fresh server per run (``--servers``) shows whether a gap
belongs to the models or to where the scheduler happened to put their stubs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import onnx_bench
import perf
import stats
from repos import assemble
from servers import repogen_server

from repogen.server.provision.perf_analyzer import ensure_perf_analyzer

ROOT = Path(__file__).resolve().parents[1]
REPORTED = {"throughput": "throughput", "p50_us": "p50", "compute_infer_us": "compute infer (µs)"}


def measure(models: list[str], args: argparse.Namespace, work: Path, repository: Path) -> list[dict[str, Any]]:
    """One server; ``args.rounds`` rounds of every model at the point, each round in a rotated order."""
    analyzer = ensure_perf_analyzer()
    rounds = []
    server = repogen_server(repository, work / "ab.log").start().wait_ready(timeout=300)
    try:
        url = server.grpc_url if args.protocol == "grpc" else server.http_url
        shapes = {"x": args.elements}
        for model in models:  # unrecorded: the first model measured on a fresh server would pay its start alone
            perf.measure(analyzer, model, url, args.protocol, shapes, args.concurrency, 1.0, streaming=args.streaming)
        for index in range(args.rounds):
            order = models[index % len(models) :] + models[: index % len(models)]
            point = (args.protocol, shapes, args.concurrency, 2.0)
            results = {m: perf.measure(analyzer, m, url, *point, streaming=args.streaming) for m in order}
            rounds.append(results)
            line = "  ".join(f"{m} {results[m]['throughput']:.0f}/s {results[m]['p50_us']:.0f} µs" for m in models)
            print(f"  round {len(rounds)}: {line}", flush=True)
    finally:
        server.stop()
    return rounds


def summary(models: list[str], rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model: ratios (differences for compute infer) to the last model named, round by round."""
    base = models[-1]
    out: dict[str, Any] = {}
    for model in models[:-1]:
        out[model] = {}
        for metric, label in REPORTED.items():
            if metric == "compute_infer_us":
                values = [r[model][metric] - r[base][metric] for r in rounds]
            else:
                values = [r[model][metric] / r[base][metric] for r in rounds]
            out[model][label] = {k: round(v, 3) for k, v in stats.spread(values).items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="the last one named is the baseline")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--servers", type=int, default=1, help="a fresh server (fresh stubs) for each")
    parser.add_argument("--protocol", choices=("grpc", "http"), default="grpc")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--elements", type=int, default=16, help="float32 elements of input x")
    parser.add_argument("--streaming", action="store_true", help="over gRPC streams (decoupled models)")
    args = parser.parse_args(argv)
    work = ROOT / "build" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    repository = assemble(work)
    if any(model.startswith("Onnx") for model in args.models):  # bench/apps/onnx_app.py's, built by a builder venv
        onnx_bench.add_models(repository, work)
    rounds: list[dict[str, Any]] = []
    for server in range(args.servers):
        print(f"server {server + 1} of {args.servers}", flush=True)
        rounds += measure(args.models, args, work, repository)
    point = f"{args.protocol}, {args.elements} floats, c={args.concurrency}, {len(rounds)} rounds"
    print(json.dumps({"point": point, "against": args.models[-1], **summary(args.models, rounds)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
