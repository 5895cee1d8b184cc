"""Shared pieces of the container tests: repositories built once per run, served by stand-in images.

Every test here runs on the Docker engine (``docker_engine``, which fails a test rather than skipping
it when there is none) and on the stand-ins of NGC's images (``standin_image``, built once per run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from runs import ROOT, umask

from repogen.testing.builders import checkout_root, ensure_builder_venv
from repogen.testing.packages import BUILDER_PACKAGES, build_packages_app, builder_python, expected_answers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.containers)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "containers: runs stand-in NGC images on a Docker engine")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``built(app, *extra, umask=0o022)``: ``repogen build`` run as a user would, once per arguments per run."""
    done: dict[tuple[object, ...], Path] = {}

    def build(app: str, *extra: str, umask: int = 0o022) -> Path:
        key = (app, extra, umask)
        if key not in done:
            output = tmp_path_factory.mktemp("built") / "model_repository"
            proc = subprocess.run(
                [sys.executable, "-m", "repogen", "build", app, "-o", str(output), *extra],
                cwd=ROOT, capture_output=True, text=True, umask=umask, env={**os.environ, "PYTHONHASHSEED": "0"},
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout + proc.stderr
            done[key] = output
        return done[key]

    return build


@pytest.fixture(scope="session")
def packages_app(repogen_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``packages_app(umask=0o022)``: tests/apps/packages built by its builder venv (scikit-learn, onnxruntime,
    PyYAML), once per umask per run."""
    done: dict[int, Path] = {}

    def build(mask: int = 0o022) -> Path:
        if mask not in done:
            output = tmp_path_factory.mktemp("packages") / "model_repository"
            with umask(mask):
                build_packages_app(repogen_cache_dir, output)
            done[mask] = output
        return done[mask]

    return build


@pytest.fixture(scope="session")
def packages_expected(repogen_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """The packages app's answers, computed in-process by its builder's own Python."""
    return expected_answers(repogen_cache_dir, tmp_path_factory.mktemp("expected") / "expected.npz")


@pytest.fixture(scope="session")
def onnx_app(repogen_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """tests/apps/onnx (ONNX graphs on the Python backend, onnxruntime shipped) and onnxruntime's own answers."""
    root = tmp_path_factory.mktemp("onnx")
    build_packages_app(repogen_cache_dir, root / "model_repository", app="tests/apps/onnx/app.py:models")
    venv = ensure_builder_venv(builder_python(), repogen_cache_dir, tuple(sorted(BUILDER_PACKAGES)))
    script = checkout_root() / "tests" / "apps" / "onnx" / "expected.py"
    subprocess.run([str(venv / "bin" / "python"), str(script), str(root / "model_repository"),
                    str(root / "expected.npz")], check=True)  # fmt: skip
    with np.load(root / "expected.npz", allow_pickle=True) as data:
        return root / "model_repository", {key: data[key] for key in data.files}
