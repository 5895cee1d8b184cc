"""Medians and spread over rounds, and the goal ratios computed round by round.

A ratio is computed within each round (both implementations measured minutes apart at most,
under the same background noise) and then summarized; that is more robust on a shared,
noisy machine than a ratio of two medians taken from different moments.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

Sample = dict[str, Any]
# What perf_analyzer reports that the summary keeps (times in microseconds).
METRICS = (
    "throughput", "p50_us", "p99_us", "queue_us", "compute_input_us", "compute_infer_us", "compute_output_us",
    "mean_batch", "response_throughput", "ttfr_p50_us", "ttfr_p99_us", "after_cancel", "after_cancel_ms",
)  # fmt: skip


def spread(values: list[float]) -> dict[str, float]:
    """Median, min and max: on 3 rounds, min..max is the honest spread."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def point_key(sample: Sample) -> tuple[Any, ...]:
    return (sample["group"], sample["protocol"], sample["elements"], sample["concurrency"])


def summarize(samples: list[Sample]) -> list[dict[str, Any]]:
    """One row per (point, implementation) with throughput/p50/p99 spread across rounds."""
    grouped: dict[tuple[Any, ...], list[Sample]] = defaultdict(list)
    for s in samples:
        grouped[(*point_key(s), s["impl"])].append(s)
    rows = []
    for (group, protocol, elements, concurrency, impl), runs in grouped.items():
        rows.append(
            {
                "group": group, "protocol": protocol, "elements": elements, "concurrency": concurrency,
                "impl": impl, "model": runs[0]["model"],
                **{m: spread([r[m] for r in runs]) for m in METRICS if all(m in r for r in runs)},
            }
        )  # fmt: skip
    return rows


def round_ratio(
    samples: list[Sample], key: tuple[Any, ...], num: str, den: str, metric: str
) -> dict[str, float] | None:
    """``num``/``den`` of ``metric`` at point ``key``, per round, summarized."""
    by_round: dict[int, dict[str, float]] = defaultdict(dict)
    for s in samples:
        if point_key(s) == key:
            by_round[s["round"]][s["impl"]] = s[metric]
    ratios = [r[num] / r[den] for r in by_round.values() if num in r and den in r and r[den] > 0]
    return spread(ratios) if ratios else None


def round_difference(
    samples: list[Sample], key: tuple[Any, ...], num: str, den: str, metric: str
) -> dict[str, float] | None:
    """``num`` - ``den`` of ``metric`` at point ``key``, per round, summarized."""
    by_round: dict[int, dict[str, float]] = defaultdict(dict)
    for s in samples:
        if point_key(s) == key and metric in s:
            by_round[s["round"]][s["impl"]] = s[metric]
    differences = [r[num] - r[den] for r in by_round.values() if num in r and den in r]
    return spread(differences) if differences else None
