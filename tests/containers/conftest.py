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

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
