"""bench/gpu.py's result in words: printed as the run ends, and as Markdown tables for docs/benchmarks.md
(``python bench/gpu.py --table gpu-bench.json``). ``workloads``: bench/gpu.py's, each workload's generated model
and its two twins."""

from __future__ import annotations

from typing import Any


def report(result: dict[str, Any], workloads: dict[str, tuple]) -> None:
    """Every ratio, every goal met or not, and the GPU memory, as the run ends."""
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
    print("GPU memory per instance (MiB):", memory_line(result, workloads))


def _figure(value: dict[str, Any] | None, digits: int = 3) -> str:
    if value is None:
        return "not measured"
    return f"{value['median']:.{digits}f} [{value['min']:.{digits}f}, {value['max']:.{digits}f}] ({value['n']})"


def table(result: dict[str, Any], workloads: dict[str, tuple]) -> str:
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
    lines += ["", f"GPU memory per instance (MiB; peak under load = at rest + the most a point took and gave back): "
              f"{memory_line(result, workloads)}."]  # fmt: skip
    return "\n".join(lines)


def memory_line(result: dict[str, Any], workloads: dict[str, tuple]) -> str:
    """Each model's peak (at rest + transient), then each workload's generated/NV and generated/BP of the peaks."""
    memory = result["gpu_memory_mib"]
    if not memory:
        return "not read"
    parts = [f"{m} {f['peak']:.0f} ({f['at_rest']:.0f} + {f['transient']:.0f})" for m, f in memory.items()]
    for generated, nv, bp, _ in workloads.values():
        for twin, role in ((nv, "NV"), (bp, "BP")):
            if generated in memory and twin in memory and memory[twin]["peak"] > 0:
                parts.append(f"{generated}/{role} {memory[generated]['peak'] / memory[twin]['peak']:.3f}")
    return ", ".join(parts)
