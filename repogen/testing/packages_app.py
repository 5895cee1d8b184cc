"""The third-party-packages test app, built as a user would: a builder venv holding its packages.

``build_packages_app(cache, output)`` builds ``tests/apps/packages/app.py`` with the default
Python (the one running the tests) from a venv of its own holding the pinned packages below, and
saves the builder's own answers (``expected.py``) beside the repository as ``expected.npz``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from .builders import build_with, checkout_root, ensure_builder_venv

__all__ = ["APP", "BUILDER_PACKAGES", "TOO_NEW", "build_packages_app", "builder_python", "expected_answers"]

APP = "tests/apps/packages/app.py:models"
TOO_NEW = "tests/apps/packages/too_new.py:models"
# Versions with wheels for Python 3.10 and 3.12 (NGC 23.10-24.10 and 24.11+), except networkx 3.5
# (Python >= 3.11), which too_new.py imports to prove such a build leaves the 3.10 containers out.
BUILDER_PACKAGES = (
    "scikit-learn==1.6.1", "scipy==1.15.3", "onnxruntime==1.20.1", "onnx==1.17.0", "PyYAML==6.0.2",
    "networkx==3.5",
)  # fmt: skip


def builder_python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def build_packages_app(cache: Path, output: Path, *extra: str, app: str = APP) -> subprocess.CompletedProcess[str]:
    return build_with(builder_python(), app, output, *extra, cache_dir=cache, packages=BUILDER_PACKAGES)


def expected_answers(cache: Path, path: Path) -> dict[str, np.ndarray]:
    """What the builder's own Python computes for ``expected.INPUTS`` (saved at ``path``)."""
    venv = ensure_builder_venv(builder_python(), cache, tuple(sorted(BUILDER_PACKAGES)))
    app_dir = checkout_root() / "tests" / "apps" / "packages"
    subprocess.run([str(venv / "bin" / "python"), "expected.py", str(path)], cwd=app_dir, check=True)
    with np.load(path, allow_pickle=True) as data:
        return {key: data[key] for key in data.files}
