"""bench/report.py: a run whose callgrind step failed shows the newest earlier full run's counts, named as such."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import report  # noqa: E402

COUNTS = {"16 floats": {"generated": 190_000.0, "handwritten": 188_000.0}}


def _results(tmp_path: Path, monkeypatch, runs: dict[str, dict]) -> Path:
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    for name, counts in runs.items():
        (results / f"{name}.json").write_text(json.dumps({"instructions_per_request": counts}))
    monkeypatch.setattr(report, "BENCH", tmp_path / "bench")
    monkeypatch.setattr(report, "ROOT", tmp_path)
    return results


def test_a_run_without_counts_takes_the_newest_earlier_full_runs(tmp_path, monkeypatch) -> None:
    older = {"16 floats": {"generated": 1.0, "handwritten": 1.0}}
    results = _results(tmp_path, monkeypatch, {
        "2026-11-20": older, "2026-11-25": COUNTS, "2026-11-28-waiting": {"waiting": {"a": 1.0, "b": 1.0}},
        "2026-11-30": {}, "2026-12-01": {"later": {"a": 1.0, "b": 1.0}},
    })  # fmt: skip
    path = results / "2026-11-30.json"
    shown = report._with_counts(json.loads(path.read_text()), path)
    assert shown["instructions_per_request"] == COUNTS
    note = " ".join(report._counted_in(shown))
    assert "`bench/results/2026-11-25.json`'s" in note and "Not counted in this run" in note
    assert "| 16 floats | generated | 190,000 | 1.011 |" in report.instructions_table(shown)


def test_a_run_with_counts_shows_its_own_and_says_nothing_more(tmp_path, monkeypatch) -> None:
    results = _results(tmp_path, monkeypatch, {"2026-11-25": {"x": {"a": 1.0, "b": 1.0}}, "2026-11-30": COUNTS})
    path = results / "2026-11-30.json"
    shown = report._with_counts(json.loads(path.read_text()), path)
    assert shown["instructions_per_request"] == COUNTS and report._counted_in(shown) == []
