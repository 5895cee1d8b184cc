"""Model Analyzer's answer, as what to write in app.py.

It ranks the configs it measured (``results/metrics-model-inference.csv``, best first, by its
objective: throughput unless told otherwise) and leaves each variant's ``config.pbtxt`` in its output
repository. A variant is a renamed copy of the model, which the next ``repogen build`` would
overwrite; so the fields the search changes (``max_batch_size``, ``instance_group``,
``dynamic_batching``) are compared with today's config and printed as ``ModelConfig`` arguments.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format

from ..errors import TuneError
from ..triton.proto import model_config_pb2 as mc

__all__ = ["Measured", "Recommendation", "config_arguments", "describe", "read_recommendation", "report_lines"]

CSV = Path("results") / "metrics-model-inference.csv"


@dataclass(frozen=True)
class Measured:
    """One config's best point: its highest throughput over the concurrencies measured."""

    config: str
    concurrency: int
    throughput: float
    p99_ms: float


@dataclass(frozen=True)
class Recommendation:
    model: str
    today: Measured
    best: Measured
    measured: tuple[str, ...]
    arguments: dict[str, str]
    """``ModelConfig`` keyword → Python source, only where the recommended config differs from today's."""

    @property
    def gain(self) -> float:
        return self.best.throughput / self.today.throughput - 1 if self.today.throughput else 0.0


def _rows(reports: Path) -> list[dict[str, str]]:
    path = reports / CSV
    if not path.is_file():
        raise TuneError(f"Model Analyzer wrote no {CSV} under {reports}: it measured nothing (see its log there).")
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _best_points(rows: list[dict[str, str]], model: str) -> dict[str, Measured]:
    """Each config of ``model``'s best point, in Model Analyzer's order (its ranking)."""
    points: dict[str, Measured] = {}
    for row in rows:
        if row["Model"] != model:
            continue
        point = Measured(
            row["Model Config Path"], int(row["Concurrency"]), float(row["Throughput (infer/sec)"]),
            float(row["p99 Latency (ms)"]),
        )  # fmt: skip
        known = points.get(point.config)
        if known is None or point.throughput > known.throughput:
            points[point.config] = point
    return points


def _config(path: Path) -> mc.ModelConfig:
    try:
        return text_format.Parse(path.read_text(), mc.ModelConfig())
    except (OSError, text_format.ParseError) as exc:
        raise TuneError(f"cannot read {path}: {exc}") from None


def _groups(config: mc.ModelConfig) -> str:
    parts = []
    for group in config.instance_group:
        kind = mc.ModelInstanceGroup.Kind.Name(group.kind)
        gpus = f", gpus=[{', '.join(map(str, group.gpus))}]" if group.gpus else ""
        parts.append(f'InstanceGroup(count={group.count or 1}, kind="{kind}"{gpus})')
    return f"[{', '.join(parts)}]"


def _batcher(config: mc.ModelConfig) -> str:
    if not config.HasField("dynamic_batching"):
        return "None"
    batching = config.dynamic_batching
    args = []
    if batching.max_queue_delay_microseconds:
        args.append(f"max_queue_delay_microseconds={batching.max_queue_delay_microseconds}")
    if batching.preferred_batch_size:
        args.append(f"preferred_batch_size=[{', '.join(map(str, batching.preferred_batch_size))}]")
    return f"DynamicBatcher({', '.join(args)})"


def config_arguments(today: mc.ModelConfig, chosen: mc.ModelConfig) -> dict[str, str]:
    """The ``ModelConfig`` arguments that turn today's tuned fields into the chosen ones."""
    arguments = {}
    if chosen.max_batch_size != today.max_batch_size:
        arguments["max_batch_size"] = str(chosen.max_batch_size)
    if _groups(chosen) != _groups(today):
        arguments["instance_groups"] = _groups(chosen)
    if _batcher(chosen) != _batcher(today):
        arguments["batcher"] = _batcher(chosen)
    return arguments


def read_recommendation(reports: Path, configs: Path, repository: Path, model: str) -> Recommendation:
    """What Model Analyzer measured for ``model`` and what its top config changes in today's."""
    points = _best_points(_rows(reports), model)
    default = f"{model}_config_default"
    if not points or default not in points:
        raise TuneError(
            f"Model Analyzer measured no config of {model!r} ({reports / CSV}); see model-analyzer.log for why."
        )
    best = next(iter(points.values()))
    today_config = _config(repository / model / "config.pbtxt")
    chosen_config = _config(configs / best.config / "config.pbtxt") if best.config != default else today_config
    return Recommendation(model, points[default], best, tuple(points), config_arguments(today_config, chosen_config))


def describe(recommendation: Recommendation) -> list[str]:
    """Today's config and the recommended one side by side, then what to write."""
    rec = recommendation
    rows = [("today", rec.today), ("recommended", rec.best)]
    lines = [
        f"{rec.model}: {len(rec.measured)} configs measured; Model Analyzer ranks {rec.best.config} first.",
        f"  {'':<12} {'config':<32} {'concurrency':>11} {'infer/s':>10} {'p99 ms':>8}",
    ]
    for label, point in rows:
        lines.append(
            f"  {label:<12} {point.config:<32} {point.concurrency:>11} {point.throughput:>10.1f} {point.p99_ms:>8.1f}"
        )
    if not rec.arguments:
        lines.append("  Keep today's config: none measured did better.")
        return lines
    change = f"{rec.gain:+.1%} throughput" if rec.today.throughput else "measured"
    arguments = ", ".join(f"{key}={value}" for key, value in rec.arguments.items())
    lines.append(f"  Write in app.py ({change}), keeping the model's other ModelConfig arguments:")
    lines.append(f"    config=ModelConfig(..., {arguments})")
    return lines


def report_lines(found: list[Recommendation], reports: Path) -> list[str]:
    """What ``repogen tune`` prints at the end: each model's recommendation, then where the reports are."""
    lines = []
    for recommendation in found:
        lines += ["", *describe(recommendation)]
    return [*lines, f"\nModel Analyzer's reports, logs and every measured config.pbtxt: {reports}"]
