"""Helpers of the container tests: serving a repository with the README's used-by line, comparing answers."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from repogen.ondisk.reader import read_repository
from repogen.server.running.docker import Container, Engine, unique_name
from repogen.testing.answers import assert_answers_match
from repogen.triton.shm import shm_size_bytes

ROOT = Path(__file__).resolve().parents[2]
YAML_PAIR = ROOT / "tests" / "apps" / "containers" / "yaml_pair.py"
"""Two models shipping PyYAML: a small app whose package trees are hard-linked between models."""
ACCESS_KEY = secrets.token_urlsafe(24)
"""The access key the deployments' restricted APIs get in this run (``REPOGEN_ACCESS_TOKEN``, a Secret's value)."""
PREFIX = os.environ.get("REPOGEN_DOCKER_PREFIX", "repogen-test")
"""Start of the names of every container, image, volume and network these tests make: on an engine that
several checkouts share, give each its own (REPOGEN_DOCKER_PREFIX=repogen-i31)."""
PACKAGES_INPUTS = {
    "Forest": {"x": np.array([[0.5, -3.0, 0.01, 2.0], [-1.0, 12.0, -0.2, -4.0], [2.0, 0.0, 0.0, 9.0]])},
    "Onnx": {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    "Yaml": {"text": np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4, z: [1]}"]], dtype=object)},
    "Plain": {"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)},
}
"""tests/apps/packages/expected.py's inputs: scikit-learn, onnxruntime, PyYAML and numpy alone."""


def secrets_of(manifest: str) -> dict[str, dict[str, str]]:
    """Every Secret key the manifest's containers read, each holding :data:`ACCESS_KEY` (``kubectl create secret``)."""
    found: dict[str, dict[str, str]] = {}
    for match in re.finditer(r"secretKeyRef:\s+name: (\S+)\s+key: (\S+)", manifest):
        found.setdefault(match[1], {})[match[2]] = ACCESS_KEY
    return found


def disk_usage(path: Path, count_links: bool) -> int:
    """Bytes of the files under ``path``: each inode once, or each link (as a file-by-file copy stores them)."""
    seen, total = set(), 0
    for folder, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            if count_links or stat.st_ino not in seen:
                seen.add(stat.st_ino)
                total += stat.st_size
    return total


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def shm_flag(repository: Path) -> str:
    """``--shm-size=64m``: what ``repogen deploy`` computes for the repository, as Docker spells it."""
    return f"--shm-size={shm_size_bytes(read_repository(repository).python_instances()) >> 20}m"


def image_name(what: str) -> str:
    """``<prefix>-<what>:<8 hex>``, an image tag no other run uses."""
    return f"{PREFIX}-{what}:{secrets.token_hex(4)}"


def run_triton(
    engine: Engine,
    image: str,
    repository: Path,
    *,
    prefix: str,
    user: str | None = None,
    flags: Sequence[str] = (),
    args: Sequence[str] = ("tritonserver", "--model-repository=/models"),
) -> Container:
    """The README's used-by line: ``docker run --shm-size=... -v <repo>:/models:ro -p 127.0.0.1:P:8000 IMAGE
    tritonserver --model-repository=/models`` (removed by the caller's ``with``, not ``--rm``: its log outlives it)."""
    options = [shm_flag(repository), "-v", f"{repository}:/models:ro", *(["--user", user] if user else []), *flags]
    return engine.run(image, list(args), name=unique_name(f"{PREFIX}-{prefix}"), flags=options)


def assert_same(answer: dict[str, np.ndarray], expected: dict[str, np.ndarray], what: str) -> None:
    assert_answers_match(answer, expected, what)
