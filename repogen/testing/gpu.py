"""What the GPU suite (tests/gpu) and the GPU benchmark (bench/gpu.py) build with, on a machine with a GPU.

The frameworks (torch, cupy, onnxruntime) come from the server's Python, so builds name them ``--provided``,
and target the newest NGC release of the CUDA major torch was built for, as a user deploying them would.
"""

from __future__ import annotations

import importlib.metadata

from repogen.triton.devices import visible_gpus as gpu_names
from repogen.triton.releases import newest_with_cuda

__all__ = ["FRAMEWORKS", "build_arguments", "gpu_names"]

FRAMEWORKS = ("torch", "cupy", "onnxruntime")  # modules whose distributions the server's Python provides


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
