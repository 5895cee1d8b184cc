"""bench/gpu.py's one device call, rehearsed without a GPU: its warm-up, rounds that go on only where the noise
leaves a goal open, and each instance's GPU memory as its peak under load (bench/gpu_memory.py), from readings
made up here the way nvidia-smi's loop prints them. perf_analyzer is stood in by figures this file chooses, so what
is checked is which points the run measures and what it concludes from them."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _load(name: str) -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"repogen_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


gpu = _load("gpu")
memory = sys.modules["gpu_memory"]  # the modules bench/gpu.py itself imported (bench/ first on the path)
report = sys.modules["gpu_report"]


# -- memory --------------------------------------------------------------------------------------------------------


def test_a_point_that_takes_memory_and_gives_it_back_counts_what_it_took():
    readings = [(0.0, 1000.0), (1.0, 1000.0), (1.5, 1300.0), (2.5, 1100.0), (3.5, 1000.0)]
    assert memory.transient_mib(readings, 0.5, 3.0) == 300.0


def test_memory_a_point_keeps_is_not_transient_it_is_counted_at_rest():
    readings = [(0.0, 1000.0), (1.0, 1250.0), (2.0, 1250.0), (3.5, 1250.0)]
    assert memory.transient_mib(readings, 0.5, 3.0) == 0.0


def test_a_point_without_a_reading_on_each_side_has_no_figure():
    assert memory.transient_mib([(1.0, 1000.0), (2.0, 1200.0)], 0.5, 3.0) is None
    assert memory.transient_mib([(0.0, 1000.0), (2.0, 1200.0)], 0.5, 3.0) is None


def test_an_instance_s_peak_is_at_rest_plus_the_most_any_of_its_points_took_and_gave_back():
    points = [
        {"model": "A", "gpu_transient_mib": 40.0}, {"model": "A", "gpu_transient_mib": 90.0},
        {"model": "A", "gpu_transient_mib": None}, {"model": "B", "gpu_transient_mib": 0.0}, {"model": "C"},
    ]  # fmt: skip
    found = memory.peaks({"A": 600.0, "B": 500.0}, points)
    assert found == {
        "A": {"at_rest": 600.0, "transient": 90.0, "peak": 690.0},
        "B": {"at_rest": 500.0, "transient": 0.0, "peak": 500.0},
    }


def test_the_sampler_stamps_each_reading_as_it_arrives_and_skips_what_is_not_a_figure():
    lines = ("1000", "No devices were found", "1200")
    script = f"import time\nfor line in {lines!r}:\n print(line, flush=True)\n time.sleep(0.1)"
    before = time.monotonic()
    with memory.Sampler([sys.executable, "-c", script]) as sampler:
        deadline = time.monotonic() + 10
        while len(sampler.readings) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert [mib for _, mib in sampler.readings] == [1000.0, 1200.0]
    (first, _), (second, _) = sampler.readings
    assert before <= first < second <= time.monotonic()


# -- rounds --------------------------------------------------------------------------------------------------------


class Bench:
    """perf_analyzer stood in: each model's rate at each point, round by round, as this test chooses."""

    def __init__(self, rate: Any):
        self.rate = rate
        self.calls: list[tuple[str, int, float]] = []

    def __call__(self, analyzer: Any, server: Any, model: str, concurrency: int, window: float, streams: bool) -> dict:
        self.calls.append((model, concurrency, window))
        measured = sum(1 for m, c, w in self.calls if (m, c, w) == (model, concurrency, window))
        figures = {"rate": self.rate(model, concurrency, measured - 1), "p50_us": 100.0}
        return figures | ({"ttfr_p50_us": 50.0} if streams else {})


def _run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rate: Any, rounds: int = 8) -> tuple[dict, Bench]:
    bench = Bench(rate)
    monkeypatch.setattr(gpu, "measure", bench)
    result: dict[str, Any] = {"points": [], "summary": [], "goals": [], "rounds": 0, "gpu_memory_mib": {}}
    run = gpu._Run(None, None, result, time.monotonic())
    gpu.warm_up(run)
    args = gpu._parser().parse_args(["--out", str(tmp_path / "gpu-bench.json"), "--points", str(tmp_path / "p.jsonl"),
                                     "--rounds", str(rounds), "--budget-s", "10000"])  # fmt: skip
    gpu._rounds(args, run)
    return result, bench


def _clear(model: str, concurrency: int, turn: int) -> float:
    """Every generated model well past its goals; every twin and second model at 100/s."""
    return 150.0 if model in {w[0] for w in gpu.WORKLOADS.values()} | {"TwoStepGpu", "GpuNumpy"} else 100.0


def test_each_model_is_warmed_up_once_unrecorded_then_every_group_is_measured_min_rounds_times(monkeypatch, tmp_path):
    result, bench = _run(monkeypatch, tmp_path, _clear)
    warm = [call for call in bench.calls if call[2] == gpu.WARM_WINDOW_S]
    models = {m for _, _, group, _ in gpu.groups() for m in group}
    assert sorted(m for m, _, _ in warm) == sorted(models) and {c for _, c, _ in warm} == {gpu.WARM_C}
    assert bench.calls[: len(warm)] == warm  # before any round
    assert len(result["points"]) == sum(len(models) for *_, models, _ in gpu.groups()) * gpu.MIN_ROUNDS
    assert result["rounds"] == gpu.MIN_ROUNDS  # the next round found every group settled
    assert all(g["met"] for g in result["goals"] if "concurrency" in g)
    assert json.loads((tmp_path / "gpu-bench.json").read_text())["points"] == result["points"]


def test_rounds_go_on_for_the_point_whose_ratios_straddle_its_goal_and_no_other(monkeypatch, tmp_path):
    def noisy(model: str, concurrency: int, turn: int) -> float:
        if (model, concurrency) == ("GpuTorch", 1):
            return (92.0, 108.0)[turn % 2]  # generated/NV 0.92, 1.08, ...: the H200's +-0.1 at c=1
        return _clear(model, concurrency, turn)

    result, _ = _run(monkeypatch, tmp_path, noisy, rounds=7)
    counts: dict[tuple[str, int], int] = {}
    for point in result["points"]:
        key = (point["group"], point["concurrency"])
        counts[key] = counts.get(key, 0) + 1
    assert counts.pop(("linear-256", 1)) == 3 * 7
    assert set(counts.values()) == {2 * gpu.MIN_ROUNDS, 3 * gpu.MIN_ROUNDS}  # the pairs' 2 models, the workloads' 3
    assert result["rounds"] == 7
    verdict = next(g for g in result["goals"] if g["point"].startswith("linear-256 c=1") and "NV >= 1.0" in g["goal"])
    assert verdict["n"] == 7 and verdict["min"] < 1.0 < verdict["max"]


def test_the_memory_goal_and_line_read_peaks_with_both_twins(monkeypatch):
    found = {m: {"at_rest": 500.0, "transient": 0.0, "peak": 500.0} for w in gpu.WORKLOADS.values() for m in w[:3]}
    found["GpuTorch"] = {"at_rest": 500.0, "transient": 40.0, "peak": 540.0}  # 1.08x NV's peak
    verdicts = {g["point"]: g["met"] for g in gpu.goals([], found) if "memory" in g["goal"]}
    assert verdicts == {"linear-256 (GpuTorch, GpuTorchNV)": False, "image-3x224x224 (GpuImage, GpuImageNV)": True,
                        "tokens-64 (GpuTokens, GpuTokensNV)": True}  # fmt: skip
    line = report.memory_line({"gpu_memory_mib": found}, gpu.WORKLOADS)
    assert "GpuTorch 540 (500 + 40)" in line and "GpuTorch/NV 1.080" in line and "GpuTorch/BP 1.080" in line


def test_memory_at_rest_is_read_once_it_has_fallen_and_stopped_falling(monkeypatch):
    readings = iter([9000.0, 9000.0, 8400.0, 8000.0, 8000.0, 7000.0])  # the stub still exiting, then done
    monkeypatch.setattr(memory, "used_mib", lambda: next(readings))
    assert memory.settled_mib(poll_s=0.0) == 8000.0
