"""Assemble the model repositories the benchmark's tritonserver serves.

repogen builds ``bench/apps/app.py`` into ``<work>/generated``; the served repository is a copy of
those models plus the hand-written ones from ``bench/handwritten``. Each hand-written model gets
the config.pbtxt of the generated model doing the same work (renamed), so every comparison runs
under byte-for-byte the same configuration apart from the name.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from repogen import build_app
from repogen.testing.callgrind import renamed_config

BENCH = Path(__file__).resolve().parent
HANDWRITTEN = BENCH / "handwritten"
# hand-written model -> the generated model whose config it takes
SAME_CONFIG = {
    "DoubleHW": "Double",
    "DoubleDLPack": "Double",
    "HWStepAdd": "StepAdd",
    "HWStepMul": "StepMul",
    "HWStepSub": "StepSub",
    "HWOne": "Fused",
    "TokensHW": "Tokens",
    "TokensHWPolling": "Tokens",
    "SlowTokensHW": "SlowTokens",
    "SlowTokensHWPolling": "SlowTokens",
    "WaitingHW": "Waiting",
    "WaitingRRHW": "WaitingRR",
}
FIXED_BATCHES = (2, 4, 8)  # apps/app.py's DoubleX<n>: exactly n requests per execute
# hand-written models served under another name too: (copy's name, the directory it copies, its config's model)
VARIANTS = tuple((f"DoubleHWX{n}", "DoubleHW", f"DoubleX{n}") for n in FIXED_BATCHES)
COLD_START_TEMPLATE = "AddSubHW"
# bench/gpu.py's twins, bench/handwritten/Gpu* (they import torch and want a GPU): not in the CPU repository
GPU_ONLY = tuple(sorted(p.name for p in HANDWRITTEN.glob("Gpu*") if p.is_dir()))
ONNX_TEMPLATE = "OnnxHW"  # copied beside each ONNX model by bench/onnx_bench.py, with that model's config


def assemble(work: Path) -> Path:
    """Build the generated models and lay out the served repository under ``work``; return it."""
    generated = work / "generated"
    build_app(f"{BENCH / 'apps' / 'app.py'}:models", generated, force=True)
    repo = work / "repository"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    for model in sorted(p for p in generated.iterdir() if p.is_dir()):
        shutil.copytree(model, repo / model.name)
    left_out = (COLD_START_TEMPLATE, ONNX_TEMPLATE, *GPU_ONLY)
    for model in sorted(p for p in HANDWRITTEN.iterdir() if p.is_dir() and p.name not in left_out):
        shutil.copytree(model, repo / model.name)
        if model.name in SAME_CONFIG:
            source = generated / SAME_CONFIG[model.name]
            config = renamed_config((source / "config.pbtxt").read_text(), source.name, model.name)
            (repo / model.name / "config.pbtxt").write_text(config)
    for name, source_name, config_of in VARIANTS:
        shutil.copytree(HANDWRITTEN / source_name, repo / name)
        config = renamed_config((generated / config_of / "config.pbtxt").read_text(), config_of, name)
        (repo / name / "config.pbtxt").write_text(config)
    (repo / "HWPipeline" / "1").mkdir(exist_ok=True)  # an ensemble still needs its version directory
    return repo


def assemble_cold_start(work: Path, models: int) -> tuple[Path, list[str], list[str]]:
    """``models`` generated AddSub models and as many hand-written ones with the same config, in one repository."""
    generated = work / f"many-{models}"
    env = os.environ.get("BENCH_MODELS")
    os.environ["BENCH_MODELS"] = str(models)
    try:
        build_app(f"{BENCH / 'apps' / 'many.py'}:models", generated, force=True)
    finally:
        if env is None:
            os.environ.pop("BENCH_MODELS", None)
        else:
            os.environ["BENCH_MODELS"] = env
    repo = work / f"cold-start-{models}"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    names = sorted(p.name for p in generated.iterdir() if p.is_dir())
    handwritten = []
    for name in names:
        shutil.copytree(generated / name, repo / name)
        twin = f"{name}HW"
        shutil.copytree(HANDWRITTEN / COLD_START_TEMPLATE, repo / twin)
        config = renamed_config((generated / name / "config.pbtxt").read_text(), name, twin)
        (repo / twin / "config.pbtxt").write_text(config)
        handwritten.append(twin)
    shutil.copy2(generated / "repogen.manifest.json", repo / "repogen.manifest.json")
    return repo, names, handwritten
