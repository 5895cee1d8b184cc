"""pytest fixtures that serve model repositories with a real, stock tritonserver.

* ``triton_install`` (session): tritonserver + a numpy-only server venv, installed once
  into ``$REPOGEN_CACHE_DIR`` (default ``<rootdir>/.cache``). The release comes from
  ``$REPOGEN_TRITON_VERSION`` (default 2.51.0).
* ``triton_server`` (function): a factory ``triton_server(repo_dir, **kw) -> TritonServer``
  returning a started, ready server; every server it made is stopped at teardown, and a
  failing test's report shows the tail of each server's log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from repogen.server.install import ServerInstall, VenvInfo, ensure_server, ensure_server_venv, venv_info
from repogen.server.process import TritonServer
from repogen.server.releases import DEFAULT_RELEASE

__all__ = ["TritonInstallation", "triton_install", "triton_server"]

_SERVERS = pytest.StashKey[list[TritonServer]]()


@dataclass(frozen=True)
class TritonInstallation:
    """A tritonserver install plus the venv whose Python its backend stubs embed."""

    install: ServerInstall
    venv: VenvInfo

    def server(self, model_repository: str | Path, **kwargs: Any) -> TritonServer:
        """A not-yet-started server for ``model_repository`` (use as a context manager)."""
        return TritonServer(model_repository, self.install, self.venv, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: runs a real tritonserver")


@pytest.fixture(scope="session")
def triton_install(pytestconfig: pytest.Config) -> TritonInstallation:
    """Install (or reuse) the tritonserver release under test and its numpy-only venv."""
    cache_env = os.environ.get("REPOGEN_CACHE_DIR")
    cache_dir = Path(cache_env) if cache_env else pytestconfig.rootpath / ".cache"
    release = os.environ.get("REPOGEN_TRITON_VERSION") or DEFAULT_RELEASE.tritonserver
    install = ensure_server(release, cache_dir=cache_dir)
    venv = ensure_server_venv(cache_dir=cache_dir)
    return TritonInstallation(install, venv_info(venv))


@pytest.fixture
def triton_server(
    triton_install: TritonInstallation, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., TritonServer]]:
    """Factory starting a ready server per call; all are stopped at teardown, even on failure."""
    servers: list[TritonServer] = []
    request.node.stash[_SERVERS] = servers

    def start(model_repository: str | Path, *, ready_timeout: float = 120.0, **kwargs: Any) -> TritonServer:
        kwargs.setdefault("log_path", tmp_path / f"tritonserver-{len(servers)}.log")
        server = triton_install.server(model_repository, **kwargs)
        servers.append(server)
        server.start()
        server.wait_ready(ready_timeout)
        return server

    try:
        yield start
    finally:
        for server in reversed(servers):
            server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach each server's log tail to a failing test's report."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        for server in item.stash.get(_SERVERS, []):
            report.sections.append((f"tritonserver log {server.log_path} (tail)", server.log_tail()))
    return report
