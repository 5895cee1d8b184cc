"""The ONNX points of ``make bench``: graphs on the Python backend against a hand-batched class model,
the fused pipeline against the ONNX step alone, and the big graph against onnxruntime in one process.

``bench/apps/onnx_app.py`` needs onnx and onnxruntime to build, which repogen's own venv does not
have: a builder venv holding them (the one the third-party-packages tests use) builds it, and its
models join the benchmark's repository. The in-process reference runs ``bench/onnx_ceiling.py`` in
that venv, on the very ``model.onnx`` the server runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import tritonclient.http as httpclient
from repos import ONNX_TEMPLATE

from repogen.runtime.onnx_options import available_cores
from repogen.server.provision.install import default_cache_dir
from repogen.testing.builders import build_with, ensure_builder_venv
from repogen.testing.callgrind import renamed_config
from repogen.testing.packages_app import BUILDER_PACKAGES, builder_python

BENCH = Path(__file__).resolve().parent
APP = "bench/apps/onnx_app.py:models"
ELEMENTS = {"Small": 256, "Mlp": 256, "Big": 8192}  # float32 inputs per sample (onnx_app.SIZES, onnx_app.BIG_IO)
# (group, size, implementation -> model, concurrencies): ratios are taken within each group and point
POINTS = tuple(
    (f"onnx {size.lower()}", size, {"generated": f"Onnx{size}", "hand-batched class": f"Onnx{size}Class",
                                    **({"hand-written model.py": f"Onnx{size}HW"} if size != "Big" else {})},
     (1, 8, 16))
    for size in ELEMENTS
) + tuple(
    (f"onnx {size.lower()} fused", size, {"fused": f"Onnx{size}Fused", "ONNX step alone": f"Onnx{size}"}, (1,))
    for size in ELEMENTS
) + (
    ("onnx threads", "Big", {"2 instances, 1 thread each": "OnnxBigX2", "2 instances, ORT default": "OnnxBigX2Ort"},
     (16,)),
)  # fmt: skip
CEILING_POINT = ("onnx big", 16)  # the served throughput compared with onnxruntime alone
HANDWRITTEN_TEMPLATE = BENCH / "handwritten" / ONNX_TEMPLATE
# generated model -> the hand-written model.py beside it (bench/handwritten/OnnxHW)
HANDWRITTEN = {
    f"Onnx{size}{variant}": f"Onnx{size}HW{variant}" for size in ("Small", "Mlp") for variant in ("", "I2", "T1", "X4")
}


def _venv() -> Path:
    return ensure_builder_venv(builder_python(), default_cache_dir(), tuple(sorted(BUILDER_PACKAGES)))


def add_models(repository: Path, work: Path) -> list[str]:
    """Build the ONNX app (its own builder venv) and copy its models into ``repository``; their names."""
    built = work / "onnx"
    build_with(builder_python(), APP, built, "--force", cache_dir=default_cache_dir(), packages=BUILDER_PACKAGES)
    names = sorted(p.name for p in built.iterdir() if p.is_dir())
    for name in names:
        shutil.rmtree(repository / name, ignore_errors=True)
        shutil.copytree(built / name, repository / name, symlinks=True)
    for generated, handwritten in HANDWRITTEN.items():
        add_handwritten(repository, generated, handwritten)
    return [*names, *HANDWRITTEN.values()]


def add_handwritten(repository: Path, generated: str, name: str) -> None:
    """``bench/handwritten/OnnxHW`` as ``name``: the generated model's config (renamed), graph and onnxruntime."""
    target = repository / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(HANDWRITTEN_TEMPLATE, target)
    config = (repository / generated / "config.pbtxt").read_text()
    (target / "config.pbtxt").write_text(renamed_config(config, generated, name))
    version = repository / generated / "1"
    os.link(version / "model.onnx", target / "1" / "model.onnx")
    shutil.copytree(version / "packages", target / "1" / "packages", symlinks=True, copy_function=os.link)


def ceiling(graph: Path, batch: int, threads: int, seconds: float) -> float:
    """Samples per second onnxruntime alone runs ``graph`` at ``batch`` with ``threads`` intra-op threads."""
    script = BENCH / "onnx_ceiling.py"
    command = [str(_venv() / "bin" / "python"), str(script), str(graph), str(batch), str(threads), str(seconds)]
    proc = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600)
    return float(proc.stdout.strip().splitlines()[-1])


def default_threads() -> int:
    """The intra-op threads OnnxSession gives one instance on this machine (runtime/onnx_options.py)."""
    return available_cores()


def executions(url: str, model: str) -> tuple[int, int]:
    """(requests, executions) the server has counted for ``model``: their ratio is the mean batch it formed."""
    client = httpclient.InferenceServerClient(url)
    try:
        stats = client.get_inference_statistics(model)["model_stats"]
        latest = max(stats, key=lambda s: int(s.get("version") or 0)) if stats else {}
        return int(latest.get("inference_stats", {}).get("success", {}).get("count", 0)), int(
            latest.get("execution_count", 0)
        )
    finally:
        client.close()
