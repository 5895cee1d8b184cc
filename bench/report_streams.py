"""The streaming and waiting sections of docs/benchmarks.md (bench/report.py renders the rest): the newest
``bench/run.py --only streaming`` and ``--only waiting`` results, where the run itself has none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report_cells import _us, fmt, verdict

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def streaming_result(result: dict[str, Any], path: Path) -> tuple[dict[str, Any], Path] | None:
    """The streaming points: the run's own, else the newest ``bench/run.py --only streaming`` result."""
    if any(s["group"] == "streaming" for s in result["samples"]):
        return result, path
    runs = sorted((BENCH / "results").glob("*-streaming.json"))
    return (json.loads(runs[-1].read_text()), runs[-1]) if runs else None


def streaming_section(found: tuple[dict[str, Any], Path] | None) -> list[str]:
    if found is None:
        return []
    result, path = found
    tokens = next(s["elements"] for s in result["samples"] if s["group"] == "streaming")
    lines = [
        f"## Streaming: a token generator, {tokens} int32 tokens a stream, gRPC streams",
        "",
        "perf_analyzer's streaming mode (`--streaming`) against the generated `Tokens` (`bench/apps/app.py`) and",
        "the same generator written by hand (`bench/handwritten/TokensHW`, asking nothing; `TokensHWPolling`, asking",
        "`request.is_cancelled()` before every token as python_backend's docs do), all three under the generated",
        "model's config.pbtxt (decoupled, max_batch_size 0, one CPU instance). The time to first response is read",
        "from perf_analyzer's profile export (its own latency columns of a decoupled model are to the last",
        "response). A cancelled stream: 200 tokens 20 ms apart (`SlowTokens` and its hand-written twins), the",
        "client reads 5 and cancels; the model counts the tokens it made while its request was already cancelled.",
        f"From `{path.relative_to(ROOT)}` ({result['date']}, {result['rounds']} round(s) on "
        f"{result.get('servers', 1)} fresh server(s), {result['window_s']:.1f} s windows).",
        "",
        "| measured (per round, then median [min–max]) | goal | measured | met |",
        "|---|---|---|---|",
    ]
    for r in (r for r in result["ratios"] if r["name"].startswith("streaming")):
        lines.append(f"| {r['name']} | {r['goal']} | {fmt(r)} | {verdict(r['goal'], r)} |")
    lines += [
        "",
        "| c | implementation | responses/s | streams/s | first response p50 (ms) | first response p99 (ms) "
        "| whole stream p50 (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in (r for r in result["summary"] if r["group"] == "streaming"):
        lines.append(
            f"| {r['concurrency']} | {r['impl']} | {_us(r, 'response_throughput')} | {_us(r, 'throughput')} | "
            f"{_us(r, 'ttfr_p50_us', 1e-3, 3)} | {_us(r, 'ttfr_p99_us', 1e-3, 3)} | {_us(r, 'p50_us', 1e-3, 3)} |"
        )
    lines += [
        "",
        "| cancelled at token 5 of 200 | tokens made after the cancellation, per stream | their compute (ms) |",
        "|---|---|---|",
    ]
    for r in (r for r in result["summary"] if r["group"] == "cancelled stream"):
        lines.append(f"| {r['impl']} | {_us(r, 'after_cancel', 1, 1)} | {_us(r, 'after_cancel_ms')} |")
    counts = {g: c for g, c in result.get("instructions_per_request", {}).items() if g.startswith("stream")}
    if counts:
        lines += [
            "",
            "Stub instructions per stream (callgrind). Under valgrind a stream runs some 50 times slower, so the",
            "generated model asks `is_cancelled()` before its callable (the execute before it took over 10 ms) and",
            "as its steps add up to 5 ms of work, where at full speed a stream this short is not asked at all; the",
            "last row counts the same model with those checks off (`repogen/testing/callgrind.py`, `quiet_copy`), the",
            "stream a full-speed stub serves. `TokensHWPolling` asks 20 times a stream.",
            "",
            "| stream | implementation | stub instructions per stream | per token | / hand-written | / polling |",
            "|---|---|---|---|---|---|",
        ]
        for group, per in counts.items():
            base, polling = list(per.values())[1], list(per.values())[2]
            for label, count in per.items():
                lines.append(f"| {group} | {label} | {count:,.0f} | {count / tokens:,.0f} | {count / base:.3f} | "
                             f"{count / polling:.3f} |")  # fmt: skip
    return [*lines, ""]


def waiting_result() -> tuple[dict[str, Any], Path] | None:
    """The newest ``bench/run.py --only waiting`` result."""
    runs = sorted((BENCH / "results").glob("*-waiting.json"))
    return (json.loads(runs[-1].read_text()), runs[-1]) if runs else None


def waiting_section(found: tuple[dict[str, Any], Path] | None) -> list[str]:
    if found is None:
        return []
    result, path = found
    lines = [
        "## Async callables that wait: an I/O-bound callable, one instance, gRPC",
        "",
        "An `async def` callable that awaits 20 ms (a database, an HTTP service) and answers y = x, served",
        "concurrently (`repogen.runtime.concurrency`, `max_concurrency=64`), against the same work written by hand",
        "(`bench/waiting.py`): *streams*, the generated `Waiting` (a decoupled model: one response, then the final",
        "flag) and `WaitingHW`, python_backend's own async `execute` of a decoupled model, both read over gRPC streams",
        "(perf_analyzer `--streaming`); *request/response*, the generated `WaitingRR` (what plain HTTP and gRPC",
        "clients call) and `WaitingRRHW`, a hand-written model with an event loop of its own answering through",
        "response senders, over plain gRPC; `WaitingOne` (`max_concurrency=1`) serves one request at a time, as an",
        "async callable was served before. Each hand-written model runs under its generated twin's config.pbtxt; at",
        "concurrency c the wait alone allows c / 20 ms requests per second, the rest is what the CPUs allow.",
        f"From `{path.relative_to(ROOT)}` ({result['date']}, {result['rounds']} round(s) on "
        f"{result.get('servers', 1)} fresh server(s), {result['window_s']:.1f} s windows).",
        "",
        "| measured (per round, then median [min–max]) | goal | measured | met |",
        "|---|---|---|---|",
    ]
    for r in result["ratios"]:
        lines.append(f"| {r['name']} | {r['goal']} | {fmt(r)} | {verdict(r['goal'], r)} |")
    lines += [
        "",
        "| group | c | implementation | requests/s | p50 (ms) | p99 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["summary"]:
        lines.append(
            f"| {r['group']} | {r['concurrency']} | {r['impl']} | {_us(r, 'throughput')} | "
            f"{_us(r, 'p50_us', 1e-3, 1)} | {_us(r, 'p99_us', 1e-3, 1)} |"
        )
    counts = result.get("instructions_per_request", {})
    if counts:
        lines += [
            "",
            "Stub instructions per request (callgrind, one request at a time, every thread of the stub process).",
            "Under valgrind a call outlives the generated model's cancellation poll (0.2 s; its 20 ms await, slowed),",
            "so it asks `is_cancelled()`, which at full speed it never does; the last row of a group counts it without",
            "those checks (`repogen/testing/callgrind.py`, `quiet_copy`).",
            "",
            "| request | implementation | stub instructions per request | / hand-written |",
            "|---|---|---|---|",
        ]
        for group, per in counts.items():
            base = list(per.values())[1]
            for label, count in per.items():
                lines.append(f"| {group} | {label} | {count:,.0f} | {count / base:.3f} |")
    return [*lines, ""]
