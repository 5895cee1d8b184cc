"""Table cells both parts of docs/benchmarks.md's renderer write (bench/report.py, bench/report_streams.py)."""

from __future__ import annotations

from typing import Any


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


def _us(r: dict[str, Any], metric: str, scale: float = 1.0, digits: int = 0) -> str:
    return fmt({k: v * scale if k != "n" else v for k, v in r[metric].items()}, digits) if metric in r else "—"
