"""bench/run.py's counts added to a results file: a full run's measurements stay (``--instructions --output`` once
wrote the file anew with the counts alone, so re-counting a day's run threw its ratios away)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import run  # noqa: E402
from instructions import COUNTED, SERVED_APART  # noqa: E402

A = {"generated": 190_000.0, "handwritten": 188_000.0}
B = {"generated": 391_000.0, "hand-written model.py": 394_000.0}


def test_counts_join_a_full_runs_results_and_leave_the_rest(tmp_path: Path) -> None:
    output = tmp_path / "2026-11-30.json"
    full = {"date": "2026-11-30T09:16:00", "machine": {"nproc": 2}, "ratios": [{"name": "r", "median": 0.9}],
            "samples": [1, 2], "instructions_per_request": {"16 floats": A}}  # fmt: skip
    output.write_text(json.dumps(full))
    joined = run.with_counts(output, {"onnx small": B})
    assert joined == {**full, "instructions_per_request": {"16 floats": A, "onnx small": B}}
    assert run.with_counts(output, {"16 floats": B})["instructions_per_request"] == {"16 floats": B}  # a recount


def test_a_new_file_says_when_and_where_it_was_counted(tmp_path: Path) -> None:
    made = run.with_counts(tmp_path / "counts.json", {"16 floats": A})
    assert set(made) == {"date", "machine", "instructions_per_request"} and made["machine"]["nproc"] >= 1


def test_the_onnx_stubs_are_counted_on_a_server_apart_and_every_group_on_one() -> None:
    assert sorted(group for groups in SERVED_APART for group in groups) == sorted(COUNTED)
    assert all(group.startswith("onnx") for group in SERVED_APART[1]) and SERVED_APART[1]
    assert not any(group.startswith("onnx") for group in SERVED_APART[0])
