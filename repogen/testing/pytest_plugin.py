"""pytest fixtures that serve model repositories with a real, stock tritonserver.

* ``triton_install`` (session): the serving pairing under test, installed once into
  ``$REPOGEN_CACHE_DIR`` (default ``~/.cache/repogen``, the CLI's): tritonserver ``$REPOGEN_TRITON_RELEASE``
  (default 2.51.0) and a numpy-only venv of Python ``$REPOGEN_SERVER_PYTHON`` (default: the
  release's NGC container Python, 3.10 up to 24.11). A missing interpreter is an error naming what
  to install, never a silent fallback to the Python running pytest (a pairing no container has).
  The pytest header names the pairing.
* ``triton_server`` (function): a factory ``triton_server(repo_dir, **kw) -> TritonServer``
  returning a started, ready server; every server it made is stopped at teardown, and a
  failing test's report shows the tail of each server's log. A plain tritonserver, with whatever
  arguments a test gives it; ``triton_install.serving(target, **options)`` serves an app or a
  repository as ``repogen serve`` does (:class:`~repogen.server.running.serving.Serving`).
* ``docker_engine`` (session): the Docker engine the ``docker`` command reaches. Without one a test
  that asks for it **fails** naming why (a skip would hide that nothing ran in a container).
* ``standin_image`` (session): ``standin_image("24.10") -> StandInImage``, the stand-in for that NGC
  image (:mod:`repogen.testing.standin`), built at most once per run and only when its inputs
  changed; the terminal summary says what each cost.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from repogen.server.provision.install import (
    ServerInstall,
    VenvInfo,
    default_cache_dir,
    ensure_server,
    ensure_server_venv,
    venv_info,
)
from repogen.server.provision.pythons import find_python, require_python
from repogen.server.running.docker import DockerError, Engine, engine
from repogen.server.running.process import TritonServer
from repogen.testing.server_under_test import pairing_under_test
from repogen.testing.standin import StandInImage, ensure_standin, standin_for
from repogen.triton.releases import Release, pairing_label

if TYPE_CHECKING:
    from repogen.server.running.serving import Serving

__all__ = [
    "TritonInstallation",
    "docker_engine",
    "repogen_cache_dir",
    "standin_image",
    "triton_install",
    "triton_server",
]

_SERVERS = pytest.StashKey[list[TritonServer]]()
_SERVED = pytest.StashKey[str]()
_STANDINS = pytest.StashKey[list[str]]()


@dataclass(frozen=True)
class TritonInstallation:
    """A tritonserver install plus the venv whose Python its backend stubs embed."""

    install: ServerInstall
    venv: VenvInfo

    @property
    def label(self) -> str:
        """The pairing served, e.g. ``"tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"``."""
        return pairing_label(self.install.release, self.venv.python_version)

    def server(self, model_repository: str | Path, **kwargs: Any) -> TritonServer:
        """A not-yet-started server for ``model_repository`` (use as a context manager)."""
        return TritonServer(model_repository, self.install, self.venv, **kwargs)

    def serving(self, target: str | Path, echo: Callable[[str], None] | None = None, **options: Any) -> Serving:
        """``repogen serve TARGET`` on this pairing and free ports, in this process, not yet started (``with`` it);
        ``options``: :class:`ServeOptions`' others (``models``, ``reload``, ``restrict``, ...)."""
        from repogen.server.running.serving import ServeOptions, Serving  # its compiler imports: only when used

        options = {"http_port": 0, "grpc_port": 0, "metrics_port": 0, **options}
        release, python = self.install.release, self.venv.python_version
        return Serving(ServeOptions(str(target), triton_release=release, server_python=python, **options), echo)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: runs a real tritonserver")


def pytest_report_header(config: pytest.Config) -> str:
    """Name the pairing the integration tests serve on, and its interpreter (or what is wrong with it)."""
    try:
        pairing = pairing_under_test()
    except (LookupError, ValueError) as exc:
        return f"repogen serving pairing: INVALID ({exc})"
    python = find_python(pairing.python)
    where = python if python else f"NOT FOUND (pyenv install {pairing.python})"
    return f"repogen serving pairing: {pairing.label}; server Python {where}"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Name the pairing served (also under ``-q``, which hides the header); ``make test`` reads this line."""
    if _SERVED in config.stash:
        terminalreporter.write_line(f"repogen served on: {config.stash[_SERVED]}")
    standins = config.stash.get(_STANDINS, [])
    if standins:
        terminalreporter.write_line(f"repogen stand-in images: {'; '.join(standins)}")


@pytest.fixture(scope="session")
def repogen_cache_dir() -> Path:
    """The CLI's cache (``$REPOGEN_CACHE_DIR``, else ``~/.cache/repogen``): servers, server and builder venvs."""
    return default_cache_dir()


@pytest.fixture(scope="session")
def triton_install(repogen_cache_dir: Path, pytestconfig: pytest.Config) -> TritonInstallation:
    """Install (or reuse) the pairing under test: the tritonserver release and a numpy-only venv of its Python."""
    pairing = pairing_under_test()
    python = require_python(pairing.python)
    install = ensure_server(pairing.release, cache_dir=repogen_cache_dir)
    venv = ensure_server_venv(python=python, numpy=pairing.release.numpy, cache_dir=repogen_cache_dir)
    installation = TritonInstallation(install, venv_info(venv))
    pytestconfig.stash[_SERVED] = installation.label
    return installation


@pytest.fixture(scope="session")
def docker_engine() -> Engine:
    """The Docker engine of the container tests; without one each test using it fails, saying why and the fix."""
    try:
        return engine()
    except DockerError as exc:
        pytest.fail(f"the container tests need a Docker engine: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def standin_image(
    docker_engine: Engine, repogen_cache_dir: Path, pytestconfig: pytest.Config
) -> Callable[[str | Release], StandInImage]:
    """``standin_image("24.10")``: the stand-in image for a release (or a tag such as ``24.10-py3.12``), built once."""
    images: dict[str, StandInImage] = {}
    built = pytestconfig.stash.setdefault(_STANDINS, [])

    def get(key: str | Release = "24.10") -> StandInImage:
        standin = standin_for(key)
        if standin.tag not in images:
            try:
                image = ensure_standin(standin, cache_dir=repogen_cache_dir, docker=docker_engine, log=lambda _: None)
            except DockerError as exc:
                pytest.fail(f"building the stand-in {standin.tag} failed: {exc}", pytrace=False)
            how = "up to date" if image.built_s is None else f"built in {image.built_s:.0f} s"
            built.append(f"{image.tag} {how} ({image.size / 1e6:.0f} MB)")
            images[standin.tag] = image
        return images[standin.tag]

    return get


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
