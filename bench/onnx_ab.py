"""ONNX models side by side at several concurrencies, interleaved rounds, on a server that serves only them.

    .venv/bin/python bench/onnx_ab.py OnnxMlp OnnxMlpHW OnnxMlpClass --concurrency 1 8 16 --rounds 3

Settles what ``make bench``'s ONNX points leave open (issue: generated >= 1.0x the hand-batched class
and the hand-written ``model.py``): the models named (from ``bench/apps/onnx_app.py`` and
``bench/handwritten/OnnxHW``, built as ``make bench`` builds them) are loaded alone, so no other
model's stub shares the two cores, and measured at each concurrency in a rotating order within
each round. Prints each model's throughput, p50 and mean batch per round, then each model's
throughput ratio to every later model named, taken per round: median [min-max]. ``--json`` writes
the samples.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import onnx_bench
import perf
import stats
from servers import repogen_server
from settle import cpu_seconds

from repogen.server.provision.perf_analyzer import ensure_perf_analyzer

ROOT = Path(__file__).resolve().parents[1]


def served(models: list[str], work: Path, rebuild: bool) -> Path:
    """A repository holding only ``models`` (linked from the built ONNX repository)."""
    built = work / "onnx-repository"
    if rebuild or not all((built / m).is_dir() for m in models):
        shutil.rmtree(built, ignore_errors=True)
        built.mkdir(parents=True)
        onnx_bench.add_models(built, work)
    repository = work / "onnx-ab"
    shutil.rmtree(repository, ignore_errors=True)
    repository.mkdir(parents=True)
    for model in models:
        shutil.copytree(built / model, repository / model, symlinks=True, copy_function=os.link)
    return repository


def stubs(server: Any, model: str) -> list[int]:
    """The stub processes of ``model``'s instances."""
    return [p for p in server.process_group_pids() if f"/{model}/".encode() in Path(f"/proc/{p}/cmdline").read_bytes()]


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def measure(models: list[str], concurrencies: list[int], rounds: int, window: float, repository: Path,
            work: Path, keep: Path | None) -> list[dict[str, Any]]:  # fmt: skip
    """Every model at every concurrency, ``rounds`` times in a rotating order; each sample also written to ``keep``
    as it is taken (a run cut short keeps what it measured)."""
    analyzer = ensure_perf_analyzer()
    samples: list[dict[str, Any]] = []
    server = repogen_server(repository, work / "onnx-ab.log").start().wait_ready(timeout=600)
    try:
        for rnd in range(rounds):
            for concurrency in concurrencies:
                shift = (rnd + concurrency) % len(models)
                for model in models[shift:] + models[:shift]:
                    pids = stubs(server, model)
                    before = onnx_bench.executions(server.http_url, model)
                    cpu = [cpu_seconds(p) for p in (*pids, server.pid)]
                    shapes = {"x": onnx_bench.ELEMENTS[_size(model)]}
                    result = perf.measure(analyzer, model, server.grpc_url, "grpc", shapes, concurrency, window)
                    used = [cpu_seconds(p) - c for p, c in zip((*pids, server.pid), cpu, strict=True)]
                    after = onnx_bench.executions(server.http_url, model)
                    requests = max(1, after[0] - before[0])
                    batch = requests / max(1, after[1] - before[1])
                    stub_us, server_us = 1e6 * sum(used[:-1]) / requests, 1e6 * used[-1] / requests
                    samples.append({"model": model, "round": rnd, "concurrency": concurrency, **result,
                                    "mean_batch": batch, "stub_cpu_us": stub_us, "server_cpu_us": server_us,
                                    "stub_threads": [threads(p) for p in pids]})  # fmt: skip
                    print(f"  r{rnd} c={concurrency:<2} {model:22} {result['throughput']:8.1f}/s "
                          f"p50 {result['p50_us'] / 1e3:7.3f} ms batch {batch:4.1f} stub cpu {stub_us:6.0f} us/req "
                          f"server cpu {server_us:5.0f} us/req threads {samples[-1]['stub_threads']}",
                          flush=True)  # fmt: skip
                    if keep:
                        keep.write_text(json.dumps({"samples": samples}, indent=1))
    finally:
        server.stop()
    return samples


def ceilings(samples: list[dict[str, Any]], repository: Path, window: float) -> dict[tuple[str, int], float]:
    """onnxruntime alone (bench/onnx_ceiling.py) on each model's graph at the batch the server formed for it (the
    median over rounds, rounded) with the threads of one of its instances, times its instances: samples per second."""
    cores, found, rates = onnx_bench.default_threads(), {}, {}
    for model in sorted({s["model"] for s in samples}):
        instances = _instances(repository / model)
        for c in sorted({s["concurrency"] for s in samples}):
            batch = max(1, round(stats.spread([s["mean_batch"] for s in samples if (s["model"], s["concurrency"])
                                               == (model, c)])["median"]))  # fmt: skip
            key = (_size(model), batch, max(1, cores // instances))
            if key not in found:
                graph = repository / f"Onnx{key[0]}" / "1" / "model.onnx"  # a class model keeps it elsewhere
                found[key] = onnx_bench.ceiling(graph, batch, key[2], window)
                print(f"  onnxruntime alone: {key[0]} batch {batch}, {key[2]} threads: {found[key]:.0f}/s", flush=True)
            rates[model, c] = found[key] * instances  # each instance a process of its own, as each stub is
    return rates


def _instances(model_dir: Path) -> int:
    config = (model_dir / "config.pbtxt").read_text()
    return sum(int(n) for n in re.findall(r"^\s*count: (\d+)", config, re.MULTILINE)) or 1


def _cpu() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "")


def _size(model: str) -> str:
    return next(size for size in onnx_bench.ELEMENTS if model.startswith(f"Onnx{size}"))


def summary(models: list[str], concurrencies: list[int], samples: list[dict[str, Any]],
            alone: dict[tuple[str, int], float]) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    by = {(s["model"], s["concurrency"], s["round"]): s for s in samples}
    rounds = sorted({s["round"] for s in samples})
    for c in concurrencies:
        for model in models:
            rate = stats.spread([by[model, c, r]["throughput"] for r in rounds])
            cpu = stats.spread([by[model, c, r]["stub_cpu_us"] for r in rounds])
            row = {"c": c, "model": model, "throughput": rate, "stub_cpu_us": cpu}
            if (model, c) in alone:
                row["of_alone"] = {k: v / alone[model, c] if k != "n" else v for k, v in rate.items()}
            rows.append(row)
        for i, model in enumerate(models):
            for base in models[i + 1 :]:
                ratio = stats.spread([by[model, c, r]["throughput"] / by[base, c, r]["throughput"] for r in rounds])
                rows.append({"c": c, "model": f"{model}/{base}", "ratio": ratio})
    return rows


def _line(row: dict[str, Any]) -> str:
    value = row.get("ratio") or row["throughput"]
    digits = 3 if "ratio" in row else 0
    low, high = f"{value['min']:.{digits}f}", f"{value['max']:.{digits}f}"
    line = f"c={row['c']:<2} {row['model']:44} {value['median']:.{digits}f} [{low}-{high}]"
    if "stub_cpu_us" in row:
        cpu = row["stub_cpu_us"]
        line += f"/s  stub CPU {cpu['median']:.0f} [{cpu['min']:.0f}-{cpu['max']:.0f}] us/request"
    if "of_alone" in row:
        alone = row["of_alone"]
        line += f"  {alone['median']:.2f} [{alone['min']:.2f}-{alone['max']:.2f}] of onnxruntime alone"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=float, default=1.5, help="seconds per perf_analyzer measurement window")
    parser.add_argument("--rebuild", action="store_true", help="build the ONNX app again")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--ceiling", action="store_true", help="and onnxruntime alone at each model's mean batch")
    args = parser.parse_args(argv)
    work = ROOT / "build" / "bench"
    work.mkdir(parents=True, exist_ok=True)
    repository = served(args.models, work, args.rebuild)
    began, load = dt.datetime.now(dt.timezone.utc), os.getloadavg()[0]
    samples = measure(args.models, args.concurrency, args.rounds, args.window, repository, work, args.json)
    alone = ceilings(samples, work / "onnx-repository", args.window) if args.ceiling else {}
    rows = summary(args.models, args.concurrency, samples, alone)
    for row in rows:
        print(_line(row))
    if args.json:
        alone_rows = [{"model": m, "concurrency": c, "throughput": r} for (m, c), r in alone.items()]
        run = {
            "began": began.isoformat(timespec="minutes"), "ended": dt.datetime.now(dt.timezone.utc).isoformat(
                timespec="minutes"), "load_average": [round(load, 1), round(os.getloadavg()[0], 1)],
            "nproc": os.cpu_count(), "cpu": _cpu(), "rounds": args.rounds, "window_s": args.window,
            "instances": {m: _instances(repository / m) for m in args.models},
        }  # fmt: skip
        document = {"run": run, "samples": samples, "summary": rows, "alone": alone_rows}
        args.json.write_text(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
