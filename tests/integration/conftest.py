"""Shared pieces of the integration tests: build with the real CLI, serve with the real server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from repogen.server.running.process import TritonServer
from repogen.testing.builders import build_with
from repogen.testing.pytest_plugin import TritonInstallation

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "tests" / "apps"


def run_cli_build(app: str, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``repogen build`` in a fresh process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "repogen", "build", app, "-o", str(output), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )


@pytest.fixture(scope="session")
def cli_build() -> object:
    return run_cli_build


@pytest.fixture(scope="session")
def builder(repogen_cache_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``builder("3.13", app, output, *extra)``: ``repogen build`` under another Python, from this checkout.

    The first use of a version creates ``<cache>/builder-venv-py<version>`` (~40 s); later ones reuse it.
    """

    def build(version: str, app: str, output: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return build_with(version, app, output, *extra, cache_dir=repogen_cache_dir)

    return build


@pytest.fixture(scope="module")
def serve(triton_install: TritonInstallation, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Module-scoped: ``serve(repo_dir)`` starts one ready server, stopped after the module."""
    servers: list[TritonServer] = []

    def start(repository: Path, **kwargs: object) -> TritonServer:
        log = tmp_path_factory.mktemp("server") / "tritonserver.log"
        server = triton_install.server(repository, log_path=log, **kwargs)
        servers.append(server)
        server.start()
        server.wait_ready(120)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
