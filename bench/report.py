"""Render a results JSON (bench/results/*.json) as docs/benchmarks.md.

Tables are generated; the interpretation lives in bench/analysis.md (written by a person after
reading the numbers) and is appended verbatim, so regenerating never silently rewrites findings.
Usage: ``python bench/report.py [RESULTS.json]`` (default: the newest full run).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from report_cells import _us, fmt, verdict
from report_streams import streaming_result, streaming_section, waiting_result, waiting_section

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DOC = ROOT / "docs" / "benchmarks.md"


def full_runs() -> list[Path]:
    """``make bench``'s own results (``<date>.json``), oldest first: not the ``--only``, GPU or ONNX side runs."""
    return sorted(p for p in (BENCH / "results").glob("*.json") if re.fullmatch(r"\d{4}-\d\d-\d\d", p.stem))


def latest() -> Path:
    runs = full_runs()
    return runs[-1] if runs else sorted((BENCH / "results").glob("*.json"))[-1]


def ratio_table(result: dict[str, Any]) -> list[str]:
    lines = ["| measured (per round, then median [min–max]) | goal | measured | met |", "|---|---|---|---|"]
    for r in (r for r in result["ratios"] if not r["name"].startswith("streaming")):  # the streaming section's
        digits = 1 if "us" in r["name"] else 2
        lines.append(f"| {r['name']} | {r['goal']} | {fmt(r, digits)} | {verdict(r['goal'], r)} |")
    cold = result["cold_start"]
    lines.append(
        f"| cold start: {cold['models']} generated / {cold['models']} hand-written models to READY, same server | "
        f"<= 1.2 | {fmt(cold['ratio'])} | {verdict('<= 1.2', cold['ratio'])} |"
    )
    for models in (10, 100):
        b = result[f"build_{models}"]
        goal = "<= 5" if models == 100 else "none"
        lines.append(f"| `repogen build` {models} models, library API (s) | {goal} | {fmt(b['library_s'])} | "
                     f"{verdict(goal, b['library_s']) if models == 100 else '—'} |")  # fmt: skip
        lines.append(f"| `repogen build` {models} models, CLI wall clock (s) | {goal} | {fmt(b['cli_s'])} | "
                     f"{verdict(goal, b['cli_s']) if models == 100 else '—'} |")  # fmt: skip
    packages = result.get("packages")
    if packages:
        ready, added = packages["ready"]["ratio"], packages["rebuild"]["added_s"]
        lines.append(f"| READY of a scikit-learn model, shipped / installed in the server | <= 1.5 | {fmt(ready)} | "
                     f"{verdict('<= 1.5', ready)} |")  # fmt: skip
        lines.append(f"| rebuild with unchanged packages, added over `--packages record` (s) | <= 1 | {fmt(added)} | "
                     f"{verdict('<= 1', added)} |")  # fmt: skip
    return lines


def instructions_table(result: dict[str, Any]) -> list[str]:
    lines = ["| request | implementation | stub instructions per request | / hand-written |", "|---|---|---|---|"]
    for group, counts in result["instructions_per_request"].items():
        if group.startswith(("stream", "waiting")):  # the streaming and waiting sections'
            continue
        base = list(counts.values())[1]  # COUNTED lists repogen's, then the hand-written baseline, then others
        for label, count in counts.items():
            lines.append(f"| {group} | {label} | {count:,.0f} | {count / base:.3f} |")
    return lines


def cold_start_table(result: dict[str, Any]) -> list[str]:
    cold = result["cold_start"]
    return [
        "| models loaded together | implementation | seconds to READY |",
        "|---|---|---|",
        f"| {cold['models']} | generated | {fmt(cold['generated'])} |",
        f"| {cold['models']} | hand-written | {fmt(cold['handwritten'])} |",
    ]


def point_table(result: dict[str, Any], group: str) -> list[str]:
    lines = [
        "| protocol | payload | c | implementation | throughput (inf/s) | p50 (ms) | p99 (ms) | server queue (µs) "
        "| compute input (µs) | compute infer (µs) | compute output (µs) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    payload = {16: "16 floats", 1 << 20: "4 MB", 0: "—"}
    for r in (r for r in result["summary"] if r["group"] == group):
        lines.append(
            f"| {r['protocol']} | {payload.get(r['elements'], r['elements'])} | {r['concurrency']} | {r['impl']} | "
            f"{_us(r, 'throughput')} | {_us(r, 'p50_us', 1e-3, 3)} | {_us(r, 'p99_us', 1e-3, 3)} | "
            f"{_us(r, 'queue_us')} | {_us(r, 'compute_input_us')} | {_us(r, 'compute_infer_us')} | "
            f"{_us(r, 'compute_output_us')} |"
        )
    return lines


def onnx_tables(result: dict[str, Any]) -> list[str]:
    """One table per ONNX group, with the mean batch the server formed (requests per execute)."""
    groups = sorted({r["group"] for r in result["summary"] if r["group"].startswith("onnx")})
    lines: list[str] = []
    for group in groups:
        lines += [
            f"### {group}",
            "",
            "| input | c | implementation | throughput (inf/s) | p50 (ms) | p99 (ms) | mean batch "
            "| compute infer (µs) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in (r for r in result["summary"] if r["group"] == group):
            lines.append(
                f"| {r['elements']} floats | {r['concurrency']} | {r['impl']} | {_us(r, 'throughput')} | "
                f"{_us(r, 'p50_us', 1e-3, 3)} | {_us(r, 'p99_us', 1e-3, 3)} | {_us(r, 'mean_batch', 1, 1)} | "
                f"{_us(r, 'compute_infer_us')} |"
            )
        lines.append("")
    return lines


def onnx_side_by_side() -> list[str]:
    """The newest ``bench/onnx_ab.py --json bench/results/<date>-onnx-ab-<name>.json`` runs and ONNX instruction
    counts (``bench/run.py --instructions --output bench/results/<date>-onnx-instructions.json``): measured after
    the make bench run the tables above come from, each under the bench lock."""
    results = BENCH / "results"
    lines: list[str] = []
    counts = sorted(results.glob("*-onnx-instructions.json"))
    if counts:
        found = json.loads(counts[-1].read_text())
        lines += [f"### Stub instructions per request, ONNX (callgrind, `{counts[-1].relative_to(ROOT)}`)", "",
                  *instructions_table(found), ""]  # fmt: skip
    runs = sorted(results.glob("*-onnx-ab-*.json"))
    newest = [p for p in runs if p.name[:10] == runs[-1].name[:10]] if runs else []
    for path in newest:
        found = json.loads(path.read_text())
        run = found["run"]
        instances = ", ".join(f"{m} {n}" for m, n in run["instances"].items())
        lines += [
            f"### {' / '.join(run['instances'])} (`{path.relative_to(ROOT)}`)",
            "",
            f"{run['began']} to {run['ended']}, {run['rounds']} interleaved rounds of {run['window_s']:.1f} s windows, "
            f"load average {run['load_average'][0]} then {run['load_average'][1]}; {run['cpu']}, {run['nproc']} "
            f"cores; instances: {instances}.",
            "",
            "| c | model or ratio | throughput (inf/s) or ratio, median [min–max] | stub CPU per request (µs) |",
            "|---|---|---|---|",
        ]
        for row in found["summary"]:
            value = row.get("ratio") or row["throughput"]
            cpu = _us(row, "stub_cpu_us") if "stub_cpu_us" in row else ""
            lines.append(f"| {row['c']} | {row['model']} | {fmt(value, 2 if 'ratio' in row else 0)} | {cpu} |")
        lines.append("")
    return lines


def machine(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    return [
        f"- CPU: {m['cpu']}, `nproc` = {m['nproc']}; memory {m['memory_gib']} GiB; Linux {m['kernel']}. The machine is",
        "  shared with other jobs: expect noise, read the spread (and the instruction counts, which do not move).",
        f"- tritonserver {m['tritonserver']} for every implementation, CPU only (`KIND_CPU`); repogen's models on "
        f"Python {m['server_python']}.",
        f"- Load: perf_analyzer {m['perf_analyzer']} (from tritonclient's wheel), on the same cores as the server.",
        f"- Server-side numpy: {m['numpy_server']}.",
        f"- Run: {result['date']}, mode {result['mode']}, {result['rounds']} round(s), {result['window_s']:.1f} s "
        f"windows, protocols {', '.join(result['protocols'])}; whole run {result['duration_s']:.0f} s.",
    ]


def gpu_work_section() -> list[str]:
    """The newest ``bench/gpu_work.py`` result (``*-gpu-work.json``): one execute's Python work on the emulated GPU,
    beside the same count of main's code where a ``*-gpu-work-before.json`` of the same day is kept."""
    runs = sorted(p for p in (BENCH / "results").glob("*-gpu-work.json"))
    if not runs:
        return []
    import gpu_work  # bench/gpu_work.py

    result = json.loads(runs[-1].read_text())
    before_path = runs[-1].with_name(runs[-1].stem + "-before.json")
    before = json.loads(before_path.read_text()) if before_path.exists() else None
    return [
        "## GPU: the Python work of one execute, counted on the CPU (`bench/gpu_work.py`)",
        "",
        f"From `{runs[-1].relative_to(ROOT)}`"
        + (f", main's code (the runtime before this lane) from `{before_path.relative_to(ROOT)}`" if before else "")
        + f"; Python {result['python']}, torch {result['torch']} (CPU build), the median of {result['executes']} "
        "counted executes a point.",
        "",
        *gpu_work.method_lines(result),
        "",
        *gpu_work.goal_lines(result, before),
        "",
        gpu_work.table(result),
        "",
    ]


def render(path: Path) -> str:
    """docs/benchmarks.md from the result at ``path``: how it was measured, the goals, each group's points."""
    result = _with_counts(json.loads(path.read_text()), path)
    parts = [*_introduction(result, path.relative_to(ROOT)), *_groups(result)]
    parts += streaming_section(streaming_result(result, path))
    parts += waiting_section(waiting_result())
    parts += _onnx_sections(result)
    parts += gpu_work_section()
    for written in ("modelcar.md", "gpu.md", "analysis.md"):  # by hand (bench/modelcar.py, bench/gpu.py); findings
        if (BENCH / written).exists():
            parts += [(BENCH / written).read_text().rstrip(), ""]
    return "\n".join(parts)


def _with_counts(result: dict[str, Any], path: Path) -> dict[str, Any]:
    """A run whose callgrind step failed (it times out on a loaded machine) shows the newest earlier full run's
    counts, named as such (``counted_in``), rather than empty tables."""
    if result["instructions_per_request"]:
        return result
    for candidate in (p for p in reversed(full_runs()) if p.stem < path.stem):
        counts = json.loads(candidate.read_text()).get("instructions_per_request")
        if counts:
            return {**result, "instructions_per_request": counts, "counted_in": candidate.relative_to(ROOT)}
    return result


def _counted_in(result: dict[str, Any]) -> list[str]:
    if "counted_in" not in result:
        return []
    return [
        f"Not counted in this run (its callgrind step failed): the counts below are `{result['counted_in']}`'s, "
        "the newest run that has them, taken on that run's code.",
        "",
    ]


def _introduction(result: dict[str, Any], rel: Path) -> list[str]:
    """What is compared, the machine, how to reproduce it, and the goals."""
    return [
        "# Benchmarks",
        "",
        "repogen's generated models against hand-written Triton Python-backend `model.py` files doing the same work",
        "under the same `config.pbtxt`, and against PyTriton 0.7.0 serving the same `@batch` function: one run,",
        "one tritonserver 2.51.0 binary, every point measured with perf_analyzer. Generated from "
        f"`{rel}` by `bench/report.py`; the findings section is `bench/analysis.md`.",
        "",
        "## Machine",
        "",
        *machine(result),
        "",
        "## Reproduce",
        "",
        "```sh",
        "make bench                      # full run: results JSON, this page, chart",
        "make bench BENCH_ARGS=--quick   # smoke run: 1 round, 1 s windows, gRPC only",
        ".venv/bin/python bench/report.py bench/results/<date>.json  # re-render this page from a result",
        ".venv/bin/python bench/run.py --instructions                # stub instructions per request only",
        ".venv/bin/python bench/ab.py Double DoubleHW --rounds 8     # one point, many rounds, A/B",
        "make bench BENCH_ARGS='--only streaming'                    # the streaming points alone",
        "make bench BENCH_ARGS='--only waiting'                      # the async callables that wait, alone",
        "cd bench && ../.venv/bin/python onnx_ab.py OnnxMlp OnnxMlpHW OnnxMlpClass --ceiling  # ONNX side by side, "
        "stub CPU per request",
        "```",
        "",
        "`make bench` installs perf_analyzer (tritonclient 2.41.0's binary, with libcudart from PyPI and libb64",
        "from Debian, no GPU or root needed: `repogen.server.provision.perf_analyzer`), creates `bench/.venv-pytriton`",
        "(nvidia-pytriton 0.7.0 and matplotlib; never a dependency of repogen), builds `bench/apps/app.py` with",
        "repogen and assembles it with `bench/handwritten/` into one repository. Implementations alternate point",
        "by point in a rotating order; each ratio is computed within a round, then the median and [min–max] over",
        "rounds. perf_analyzer's server-side columns are Triton's own per-request statistics: *compute infer* is",
        "the time in the model's `execute`, stub round trip included.",
        "",
        "## Goals",
        "",
        *ratio_table(result),
        "",
        "![throughput by implementation](benchmarks.png)",
        "",
    ]


def _groups(result: dict[str, Any]) -> list[str]:
    """The points of the main run, group by group, the stub's instructions and the cold start."""
    return [
        "## Payload points: `y = 2 * x`, float32, max_batch_size 64, dynamic batching",
        "",
        *point_table(result, "payload"),
        "",
        "## Instructions per request in the backend stub (callgrind)",
        "",
        "What one request costs the stub process, counted by `valgrind --tool=callgrind`",
        "(`repogen/testing/callgrind.py`):",
        "repeatable to a fraction of a percent, whatever else the machine does.",
        "",
        *_counted_in(result),
        *instructions_table(result),
        "",
        "## Pipelines: y = ((x + 1) * 3) - 2 in 3 steps, c=1, gRPC, 16 floats",
        "",
        *point_table(result, "pipeline"),
        "",
        "## One BLS hop, c=1, gRPC, 16 floats",
        "",
        *point_table(result, "bls"),
        "",
        "## CPU-bound callable (~10 ms of pure Python per request), 1 vs 2 instances, c=2, gRPC",
        "",
        *point_table(result, "instances"),
        "",
        "Machine ceiling, the same spin in 1 and 2 plain processes (no Triton), in the same rounds",
        "(throughput = spins/s):",
        "",
        *point_table(result, "ceiling"),
        "",
        "## Cold start",
        "",
        *cold_start_table(result),
        "",
    ]


def _onnx_sections(result: dict[str, Any]) -> list[str]:
    """The ONNX points of the run, then the later side-by-side runs."""
    parts: list[str] = []
    onnx = onnx_tables(result)
    if onnx:
        parts += [
            "## ONNX on the Python backend (`bench/apps/onnx_app.py`), gRPC",
            "",
            "Graphs made by `onnx.helper`: small, an MLP 256 -> 512 -> 512 -> 16; big, three 3x3 convolutions",
            "8 -> 128 -> 128 -> 8 channels over a 32x32 image (8192 floats in, 170 M multiply-adds, 1.9 ms per sample",
            "on one core), pooled to 8 outputs. max_batch_size 16, dynamic batching with a 200 µs queue delay.",
            "*onnxruntime in one process* runs the served `model.onnx` alone at the server's mean batch with the same",
            "intra-op threads",
            "(`bench/onnx_ceiling.py`).",
            "",
            *onnx,
        ]
    side = onnx_side_by_side()
    if side:
        parts += ["## ONNX on the Python backend: later runs (`bench/onnx_ab.py`, `bench/run.py --instructions`)",
                  "", "Measured after the run above, on the same kind of machine, each under the bench lock. A ratio",
                  "is taken within a round (the first model's throughput over the second's), then median [min–max].",
                  "", *side]  # fmt: skip
    return parts


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve() if argv else latest()
    DOC.write_text(render(path))
    print(f"wrote {DOC} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
