"""Shared pieces of the container tests: repositories built once per run, served by stand-in images.

Every test here runs on the Docker engine (``docker_engine``, which fails a test rather than skipping
it when there is none) and on the stand-ins of NGC's images (``standin_image``, built once per run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from runs import ROOT, YAML_PAIR, disk_usage, image_name, umask

from repogen.server.running.docker import Engine, removing
from repogen.testing.builders import checkout_root, ensure_builder_venv
from repogen.testing.packages_app import BUILDER_PACKAGES, build_packages_app, builder_python, expected_answers
from repogen.testing.standin import StandInImage, standin_for
from repogen.triton.releases import NEWEST

DEPLOY_MODES = {"copy": [], "app": ["--app", "app.py:models"]}


@dataclass(frozen=True)
class DeployImage:
    """An image `docker build` made from the Dockerfile `repogen deploy --docker` wrote for yaml_pair.py."""

    mode: str
    tag: str
    context: Path
    dockerfile: str
    base: StandInImage
    added: int
    """Bytes the image adds to the stand-in."""
    sizes: dict[str, int]
    """The repository built here: ``links once`` (on disk), ``every link`` (as a file-by-file copy stores it)."""
    seconds: float


def repogen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "repogen", *args], cwd=cwd, check=True, capture_output=True, text=True)


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
def deploy_image(
    standin_image: Callable[..., StandInImage], docker_engine: Engine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], DeployImage]]:
    """``deploy_image("copy")`` / ``("app")``: yaml_pair.py built, deployed with ``repogen deploy --docker`` (the
    default release) and built by ``docker build --build-arg TRITON_IMAGE=<its stand-in>``, once per run."""
    images: dict[str, DeployImage] = {}
    tags: list[str] = []

    def build(mode: str) -> DeployImage:
        if mode in images:
            return images[mode]
        context = tmp_path_factory.mktemp(f"context-{mode}")
        shutil.copy2(YAML_PAIR, context / "app.py")
        repogen("build", "app.py:models", "-o", "model_repository", cwd=context)
        repogen("deploy", "model_repository", "--docker", *DEPLOY_MODES[mode], "-o", "deploy", cwd=context)
        sizes = {"links once": disk_usage(context / "model_repository", False),
                 "every link": disk_usage(context / "model_repository", True)}  # fmt: skip
        if mode == "app":
            shutil.rmtree(context / "model_repository")  # the image builds its own
        base = standin_image(NEWEST.ngc)
        assert base.standin == standin_for(NEWEST)  # the release `repogen deploy` targets by default
        tag, stage = image_name(f"dockerfile-{mode}"), image_name(f"dockerfile-{mode}-build")
        tags.extend([tag, stage])
        dockerfile = context / "deploy" / "Dockerfile"
        command = ["build", "-f", str(dockerfile), "--build-arg", f"TRITON_IMAGE={base.tag}", str(context)]
        builder = docker_engine.with_env(DOCKER_BUILDKIT="0")  # BuildKit would pull the `# syntax=` image
        start = time.monotonic()
        if mode == "app":  # the build stage tagged too, so that it is removed with the image
            builder(command[0], "--target", "build", "-t", stage, *command[1:], timeout=1200)
        builder(command[0], "-t", tag, *command[1:], timeout=1200)
        seconds = time.monotonic() - start
        added = docker_engine.inspect("image", tag)["Size"] - base.size
        images[mode] = DeployImage(mode, tag, context, dockerfile.read_text(), base, added, sizes, seconds)
        return images[mode]

    try:
        yield build
    finally:
        with removing(docker_engine, "image", *tags):  # the tags made meanwhile
            pass


@pytest.fixture(scope="session")
def packages_app(repogen_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``packages_app(umask=0o022, *build_args)``: tests/apps/packages built by its builder venv (scikit-learn,
    onnxruntime, PyYAML), once per umask and arguments per run."""
    done: dict[tuple[int, tuple[str, ...]], Path] = {}

    def build(mask: int = 0o022, *extra: str) -> Path:
        if (mask, extra) not in done:
            output = tmp_path_factory.mktemp("packages") / "model_repository"
            with umask(mask):
                build_packages_app(repogen_cache_dir, output, *extra)
            done[mask, extra] = output
        return done[mask, extra]

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
    subprocess.run([str(venv / "bin" / "python"), str(script), str(root / "expected.npz")], check=True)
    with np.load(root / "expected.npz", allow_pickle=True) as data:
        return root / "model_repository", {key: data[key] for key in data.files}
