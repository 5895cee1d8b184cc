"""The goal ratios of a `make bench` run, each computed per round (stats.round_ratio): generated against hand-written
(and PyTriton) per payload point, the pipelines, instances, BLS, streaming and the ONNX points."""

from __future__ import annotations

from typing import Any

import onnx_bench
import stats
import streaming

Point = tuple[str, int, tuple[int, ...]]  # (payload, float32 elements, concurrencies)


class _Rows:
    """The ratio rows of one run's samples; ``add`` leaves out a ratio no round measured."""

    def __init__(self, samples: list[dict[str, Any]]):
        self.samples = samples
        self.rows: list[dict[str, Any]] = []

    def add(
        self, name: str, key: tuple[Any, ...], num: str, den: str, metric: str, goal: str, difference: bool = False
    ) -> None:
        value = (stats.round_difference if difference else stats.round_ratio)(self.samples, key, num, den, metric)
        if value is not None:
            self.rows.append({"name": name, "goal": goal, **value})


def ratios(
    samples: list[dict[str, Any]], protocols: tuple[str, ...], points: tuple[Point, ...]
) -> list[dict[str, Any]]:
    """The issue's goal ratios, each computed per round."""
    rows = _Rows(samples)
    _payload_ratios(rows, protocols, points)
    _pipeline_ratios(rows)
    rows.rows += _ceiling(samples)
    rows.add("BLS / direct p50 (c=1)", ("bls", "grpc", 16, 1), "via BLS", "direct", "p50_us", "reference")
    rows.rows += streaming.ratios(samples)
    _onnx_ratios(rows)
    return rows.rows


def _payload_ratios(rows: _Rows, protocols: tuple[str, ...], points: tuple[Point, ...]) -> None:
    for payload, elements, concurrencies in points:
        for protocol in protocols:
            for c in concurrencies:
                key = ("payload", protocol, elements, c)
                where = f"{payload}, {protocol}, c={c}"
                rows.add(f"generated/hand-written throughput ({where})", key, "generated", "handwritten", "throughput",
                         ">= 0.97")  # fmt: skip
                rows.add(f"generated/hand-written p50 ({where})", key, "generated", "handwritten", "p50_us", "<= 1.05")
                rows.add(f"generated - hand-written server compute infer, us ({where})", key, "generated",
                         "handwritten", "compute_infer_us", "<= 5", difference=True)  # fmt: skip
    for protocol in protocols:
        for c in (1, 16):
            rows.add(f"generated/PyTriton throughput (16 floats, {protocol}, c={c})", ("payload", protocol, 16, c),
                     "generated", "pytriton", "throughput", ">= 2.5")  # fmt: skip


def _pipeline_ratios(rows: _Rows) -> None:
    pipeline = ("pipeline", "grpc", 16, 1)
    rows.add("fused 3-step pipeline / the same work in one hand-written model, p50 (c=1)", pipeline,
             "fused (repogen)", "one model (hand-written)", "p50_us", "<= 1.1")  # fmt: skip
    rows.add("ensemble of repogen steps / hand-written ensemble of hand-written steps, p50 (c=1)", pipeline,
             "ensemble (repogen)", "ensemble (hand-written)", "p50_us", "<= 1.05")  # fmt: skip
    rows.add("ensemble / fused, p50 (c=1)", pipeline, "ensemble (repogen)", "fused (repogen)", "p50_us", "reference")
    rows.add("2 instances / 1 instance throughput (CPU-bound, c=2)", ("instances", "grpc", 16, 2), "2 instances",
             "1 instance", "throughput", ">= 1.8")  # fmt: skip


def _ceiling(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What two plain processes do against one on this machine (no Triton): the reference for the instances' ratio."""
    by_round: dict[int, dict[str, float]] = {}
    for s in samples:
        if s["group"] == "ceiling":
            by_round.setdefault(s["round"], {})[s["impl"]] = s["throughput"]
    parallel = [r["2 processes"] / r["1 process"] for r in by_round.values() if len(r) == 2]
    if not parallel:
        return []
    return [{"name": "machine ceiling: 2 / 1 plain processes (same spin, no Triton)", "goal": "reference",
             **stats.spread(parallel)}]  # fmt: skip


def _onnx_ratios(rows: _Rows) -> None:
    for group, size, impls, concurrencies in onnx_bench.POINTS:
        num, den, *others = list(impls)
        elements = onnx_bench.ELEMENTS[size]
        for c in concurrencies:
            key = (group, "grpc", elements, c)
            for other in others:  # the hand-written model.py
                rows.add(f"{group}: models.onnx(backend='python') / {other}, throughput (c={c})", key, num, other,
                         "throughput", ">= 1.0")  # fmt: skip
            if group.endswith("fused"):
                rows.add(f"{group}: fused Python -> ONNX -> Python / the ONNX step alone, p50 (c={c})", key, num,
                         den, "p50_us", "<= 1.1")  # fmt: skip
            elif group == "onnx threads":
                rows.add(f"{group}: big graph, 2 instances, 1 intra-op thread each / onnxruntime's default, "
                         f"throughput (c={c})", key, num, den, "throughput", "reference")  # fmt: skip
            else:
                rows.add(f"{group}: models.onnx(backend='python') / hand-batched class model, throughput (c={c})",
                         key, num, den, "throughput", ">= 1.0")  # fmt: skip
    group, c = onnx_bench.CEILING_POINT
    rows.add(f"{group}: served / onnxruntime alone in one process at the server's mean batch, throughput (c={c})",
             (group, "grpc", onnx_bench.ELEMENTS["Big"], c), "generated", "onnxruntime in one process", "throughput",
             ">= 0.8")  # fmt: skip
