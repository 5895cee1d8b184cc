"""What the GPU suite (tests/gpu) and the GPU benchmark (bench/gpu.py) build with, on a machine with a GPU.

The frameworks (torch, cupy, onnxruntime) come from the server's Python, so builds name them ``--provided``,
and target the newest NGC release of the CUDA major torch was built for, as a user deploying them would.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from repogen.triton.gpus import visible_gpus as gpu_names
from repogen.triton.releases import newest_with_cuda

__all__ = [
    "FRAMEWORKS", "PIDS_DIR", "build_arguments", "gpu_names", "SUITE_APPS", "MADE_ON_GPU", "build", "record_server",
]  # fmt: skip

# Modules whose distributions the server's Python provides: the machine's frameworks, and the kit's array-api-strict
# (tests/gpu/device.sh puts the kit on the server's path after them): the GPU machine has no pip or index to ship from.
FRAMEWORKS = ("torch", "cupy", "onnxruntime", "array_api_strict")
# tests/gpu/device.sh names a directory here: each started server leaves its pid there, so the run can stop what a
# killed process (a `timeout` past its budget skips fixture teardown) left running.
PIDS_DIR = "REPOGEN_GPU_PIDS"


def record_server(server: Any, who: str) -> None:
    """Note ``server``'s pid (its process group's) in ``$REPOGEN_GPU_PIDS``, where set, as ``<who>-<pid>``."""
    directory = os.environ.get(PIDS_DIR)
    if directory:
        Path(directory, f"{who}-{server.pid}").write_text(f"{server.pid}\n")


def build_arguments() -> list[str]:
    """``--triton-release`` and a ``--provided`` for each framework's distribution here (cupy-cuda13x, ...)."""
    import torch

    major = int((torch.version.cuda or "13").split(".")[0])
    release = newest_with_cuda(major)
    if release is None:
        raise LookupError(f"no NGC release repogen knows has CUDA {major}, the CUDA torch {torch.__version__} is for")
    distributions = importlib.metadata.packages_distributions()
    provided = [
        arg for module in FRAMEWORKS for dist in distributions.get(module, [])[:1] for arg in ("--provided", dist)
    ]
    return ["--triton-release", release.ngc, *provided]


# Every app the GPU suite builds (bench/gpu.py builds its own): `tests/gpu/builds.py` builds them all in the CPU
# rehearsal, where the suite itself stops at its GPU check.
SUITE_APPS = (
    "tests/apps/gpu/app.py:models", "tests/apps/gpu/cupy_app.py:models", "tests/apps/gpu/onnx_app.py:models",
    "tests/apps/gpu/second_gpu.py:models", "tests/apps/gpu/faults_app.py:models", "examples/quickstart/app.py:models",
    "tests/apps/gpu/made_on_gpu.py:models",
)  # fmt: skip
# Apps whose import makes models on a GPU (``.to("cuda")`` at bind time, as PyTriton's examples do): only a machine
# with one builds them, so the CPU rehearsal leaves them out, saying so.
MADE_ON_GPU = ("tests/apps/gpu/made_on_gpu.py:models",)


def build(app: str, out: Path, root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``repogen build app -o out`` as the GPU suite builds (in ``root``, the checkout), output captured."""
    command = [sys.executable, "-m", "repogen", "build", app, "-o", str(out), *build_arguments(), *extra]
    return subprocess.run(command, cwd=root, capture_output=True, text=True)
