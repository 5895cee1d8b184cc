"""Render a results JSON (bench/results/*.json) as docs/benchmarks.md.

Tables are generated; the interpretation lives in bench/analysis.md (written by a person after
reading the numbers) and is appended verbatim, so regenerating never silently rewrites findings.
Usage: ``python bench/report.py [RESULTS.json]`` (default: the newest full run).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DOC = ROOT / "docs" / "benchmarks.md"


def latest() -> Path:
    runs = sorted(p for p in (BENCH / "results").glob("*.json") if not p.stem.endswith("-quick"))
    return runs[-1] if runs else sorted((BENCH / "results").glob("*.json"))[-1]


def fmt(s: dict[str, float], digits: int = 2) -> str:
    """``median [min–max]``."""
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}–{s['max']:.{digits}f}]"


def verdict(goal: str, s: dict[str, float]) -> str:
    """Met by the median; 'every round' when even the worst round meets it."""
    if goal[:2] not in (">=", "<="):
        return "—"
    bound = float(goal[2:])
    ok = (lambda v: v >= bound) if goal.startswith(">=") else (lambda v: v <= bound)
    worst = s["min"] if goal.startswith(">=") else s["max"]
    if ok(worst):
        return "**yes** (every round)" if s.get("n", 1) > 1 else "**yes** (1 round)"
    return "yes (median)" if ok(s["median"]) else "**no**"


def ratio_table(result: dict[str, Any]) -> list[str]:
    lines = ["| ratio (per round, then median [min–max]) | goal | measured | met |", "|---|---|---|---|"]
    for r in result["ratios"]:
        lines.append(f"| {r['name']} | {r['goal']} | {fmt(r)} | {verdict(r['goal'], r)} |")
    for models in (10, 100):
        b = result[f"build_{models}"]
        goal = "<= 5" if models == 100 else "none"
        lines.append(f"| `repogen build` {models} models, library API (s) | {goal} | {fmt(b['library_s'])} | "
                     f"{verdict(goal, b['library_s']) if models == 100 else '—'} |")  # fmt: skip
        lines.append(f"| `repogen build` {models} models, CLI wall clock (s) | {goal} | {fmt(b['cli_s'])} | "
                     f"{verdict(goal, b['cli_s']) if models == 100 else '—'} |")  # fmt: skip
    lines.append(f"| tritonserver start-up to READY, 20 generated models (s) | none | "
                 f"{fmt(result['startup_20']['ready_s'])} | — |")  # fmt: skip
    return lines


def point_table(result: dict[str, Any], group: str) -> list[str]:
    lines = [
        "| protocol | payload | concurrency | implementation | throughput (inf/s) | p50 (ms) | p99 (ms) | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [r for r in result["summary"] if r["group"] == group]
    payload = {16: "16 floats", 1 << 20: "4 MB", 0: "—"}
    for r in rows:
        p99 = fmt(r["p99_ms"]) if r["p99_ms"]["median"] == r["p99_ms"]["median"] else "—"  # NaN for the ceiling
        lines.append(
            f"| {r['protocol']} | {payload.get(r['elements'], r['elements'])} | {r['concurrency']} | {r['impl']} | "
            f"{fmt(r['throughput'], 0)} | {fmt(r['p50_ms'])} | {p99} | {r['errors']} |"
        )
    return lines


def machine(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    return [
        f"- CPU: {m['cpu']}, `nproc` = {m['nproc']}; memory {m['memory_gib']} GiB; Linux {m['kernel']}. The machine is",
        "  shared with other jobs: expect noise, read the spread.",
        f"- tritonserver {m['tritonserver']} for all three implementations, CPU only (`KIND_CPU`).",
        f"- Client: Python {m['python']}, tritonclient {m['tritonclient']}, numpy {m['numpy_client']}, on the same "
        "2 cores as the server (client CPU competes with the server: absolute numbers are low, ratios are what count).",
        f"- Server-side numpy: {m['numpy_server']}.",
        f"- Run: {result['date']}, mode {result['mode']}, {result['rounds']} round(s) × {result['window_s']:.0f} s "
        f"windows per point, protocols {', '.join(result['protocols'])}; whole run {result['duration_s']:.0f} s.",
    ]


def render(path: Path) -> str:
    result = json.loads(path.read_text())
    rel = path.relative_to(ROOT)
    parts = [
        "# Benchmarks",
        "",
        "repogen's generated model vs a hand-written Triton Python-backend `model.py` (same `config.pbtxt`) vs",
        "PyTriton 0.7.0 serving the same `@batch` function — one run, one tritonserver 2.51.0 binary, one load",
        "generator. Generated from "
        f"[`{rel}`](../{rel}) by `bench/report.py`; the findings section is `bench/analysis.md`.",
        "",
        "## Machine",
        "",
        *machine(result),
        "",
        "## Reproduce",
        "",
        "```sh",
        "make bench                      # full run (~15 min, 3 rounds x 2.5 s): results JSON, this page, chart",
        "make bench BENCH_ARGS=--quick   # smoke run (~1.5 min): 1 round, 1 s windows, gRPC only",
        ".venv/bin/python bench/report.py bench/results/<date>.json  # re-render this page from a result",
        "```",
        "",
        "`make bench` creates `bench/.venv-pytriton` (nvidia-pytriton 0.7.0 and matplotlib; it pins numpy<2 and",
        "is never a dependency of repogen), builds `bench/apps/app.py` with repogen, assembles it with the",
        "hand-written models in `bench/handwritten/` into one repository, serves that and PyTriton side by side,",
        "and measures every point with a fresh closed-loop client process (`bench/loadgen.py`: gRPC aio, HTTP",
        "greenlets; perf_analyzer is not installable here). Implementations are interleaved round by round in a",
        "rotating order; each ratio is computed within a round, then the median and [min–max] over rounds.",
        "",
        "## Goals",
        "",
        *ratio_table(result),
        "",
        "![throughput by implementation](benchmarks.png)",
        "",
        "## Payload points: `y = 2 * x`, float32, max_batch_size 64, dynamic batching",
        "",
        *point_table(result, "payload"),
        "",
        "## CPU-bound callable (~10 ms of pure Python per request), 1 vs 2 instances, c=2, gRPC",
        "",
        *point_table(result, "instances"),
        "",
        "Machine ceiling, the same spin in 1 and 2 plain processes (no Triton), measured in the same rounds",
        "(throughput = spins/s):",
        "",
        *point_table(result, "ceiling"),
        "",
        "## 3-step ensemble vs one fused model, and one BLS hop, c=1, gRPC, 16 floats",
        "",
        *point_table(result, "ensemble"),
        "",
        *point_table(result, "bls"),
        "",
    ]
    analysis = BENCH / "analysis.md"
    if analysis.exists():
        parts += [analysis.read_text().rstrip(), ""]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve() if argv else latest()
    DOC.write_text(render(path))
    print(f"wrote {DOC} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
