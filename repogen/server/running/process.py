"""The embedded tritonserver: a wheel's binary and backends, its stub's Python from a numpy-only venv.

That venv is what an NGC container's Python is to a model: numpy and nothing else, so a model's packages
must come from the repository. The server binds loopback only (server_process.py has the lifecycle);
:func:`embedded_server` installs the pair into the cache on first use.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from repogen.errors import ServeError, TritonServerError
from repogen.server.provision.install import (
    INSTALL_MARKER,
    ServerInstall,
    ServerInstallError,
    VenvInfo,
    default_cache_dir,
    ensure_server,
    ensure_server_venv,
    venv_info,
)
from repogen.server.provision.progress import DownloadProgress, progress
from repogen.server.provision.pythons import PythonNotFoundError, container_python_or_current, require_python
from repogen.triton.python_backend import region_prefix_args
from repogen.triton.releases import DEFAULT_RELEASE, Release, get_release, no_wheel, pairing_label
from repogen.triton.restricted_apis import restricts_grpc, restricts_http

from .host import free_ports, http_client, is_ready, pid_alive
from .server_process import ServerProcess

__all__ = [
    "ServerProcess", "TritonServer", "TritonServerError", "embedded_server", "free_ports", "http_client", "is_ready",
    "pid_alive",
]  # fmt: skip

_STRIPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONEXECUTABLE", "__PYVENV_LAUNCHER__")


class TritonServer(ServerProcess):
    """The embedded tritonserver ``install`` serving ``model_repository``, its stub on ``venv``'s Python."""

    def __init__(
        self, model_repository: str | Path, install: ServerInstall, venv: str | Path | VenvInfo, **options: Any
    ) -> None:
        """``options``: :class:`ServerProcess`'s (ports, log, extra arguments, access)."""
        self.install = install
        self.venv = venv if isinstance(venv, VenvInfo) else venv_info(venv)
        super().__init__(model_repository, **options)

    def command(self) -> list[str]:
        """The full tritonserver command line."""
        backend_dir = self.install.backend_directory(self.venv.python_version)
        return [
            str(self.install.binary),
            f"--model-repository={self.model_repository}",
            f"--backend-directory={backend_dir}",
            f"--cache-directory={self.install.cache_directory}",
            *self.loopback_args(),
            *self.restriction_args(),
            *self.region_args(),
            *self.extra_args,
        ]

    def region_args(self) -> list[str]:
        """Before python_backend r24.04 every server numbers its shm regions from 1: give this one its own prefix."""
        if any("shm-region-prefix-name" in arg for arg in self.extra_args):
            return []
        return region_prefix_args(self.install.release, f"{os.getpid()}_{self.http_port}")

    def restricts(self) -> dict[str, bool]:
        """Which of its protocols this server's release can keep behind the key: ``{"http": ..., "grpc": ...}``."""
        version = self.install.release.version
        return {"http": restricts_http(version), "grpc": restricts_grpc(version)}

    def backends(self) -> tuple[str, ...] | None:
        directory = self.install.backend_directory(self.venv.python_version)
        return tuple(sorted(p.name for p in Path(directory).iterdir() if p.is_dir()))

    def environment(self) -> dict[str, str]:
        """The environment of an activated numpy-only venv; the stub embeds its Python.

        The venv interpreter's LIBDIR comes first on LD_LIBRARY_PATH so the stub loads the
        libpython matching that interpreter's stdlib, not the system's.
        """
        env = {k: v for k, v in os.environ.items() if k not in _STRIPPED_ENV}
        env["VIRTUAL_ENV"] = str(self.venv.path)
        env["PATH"] = os.pathsep.join([str(self.venv.path / "bin"), env.get("PATH", os.defpath)])
        env["PYTHONNOUSERSITE"] = "1"
        lib_path = [p for p in (self.venv.libdir, str(self.install.libs_dir)) if p]
        if env.get("LD_LIBRARY_PATH"):
            lib_path.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(lib_path)
        return env

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        version = self.install.release.tritonserver
        return f"TritonServer({self.model_repository}, tritonserver {version}, {state})"


def _server_python(release: Release, wanted: str | None) -> tuple[Path, str, str | None]:
    """``--server-python`` (must be installed), else the release's container Python, else this one and a note."""
    if wanted is None:
        return container_python_or_current(release)
    if wanted not in release.stub_pythons:
        raise ServeError(
            f"--server-python {wanted}: tritonserver {release.tritonserver} (NGC {release.ngc}) has backend stubs for "
            f"Python {', '.join(release.stub_pythons)}. Pick one of those (its NGC container runs "
            f"{release.python}), or another --triton-release."
        )
    try:
        return require_python(wanted), wanted, None
    except (PythonNotFoundError, ValueError) as exc:
        raise ServeError(f"--server-python {wanted}: {exc}") from exc


def embedded_server(
    release_key: str | Release | None, echo: Callable[[str], None], server_python: str | None = None
) -> tuple[ServerInstall, VenvInfo]:
    """The stock tritonserver from the ``nvidia-pytriton`` wheel plus a numpy-only venv, installed once.

    The venv runs ``server_python`` (``major.minor``), by default the Python of the release's NGC
    container when it is installed, so development serves the pairing production runs. A release no
    wheel ships is refused here, naming the ones that can be embedded.
    """
    release = get_release(release_key or DEFAULT_RELEASE)
    if release.wheel is None:
        raise ServeError(
            f"--triton-release {release.ngc}: {no_wheel(release)}. Pass one of those, or run {release.label}'s own "
            f"binary with --tritonserver PATH (e.g. inside {release.image})."
        )
    python, python_version, fallback = _server_python(release, server_python)
    echo(fallback or f"Serving with {pairing_label(release, python_version)}.")
    cache = default_cache_dir()
    try:
        if (cache / f"tritonserver-{release.tritonserver}" / INSTALL_MARKER).is_file():
            install = ensure_server(release, cache_dir=cache)
        else:
            echo(
                f"First use of tritonserver {release.tritonserver} (NGC {release.ngc}): installing it into {cache} "
                f"from {release.wheel.requirement} on your package index (~55 MB download, sha256-checked)."
            )
            with DownloadProgress(release.wheel.filename) as report:
                install = ensure_server(release, cache_dir=cache, report=report)
        with progress("preparing the numpy-only server venv"):
            venv = ensure_server_venv(python=python, numpy=release.numpy, cache_dir=cache)
        return install, venv_info(venv)
    except ServerInstallError as exc:
        raise ServeError(
            f"{exc}\nOffline? Point --tritonserver at an installed tritonserver binary, or copy a populated "
            f"{cache} (REPOGEN_CACHE_DIR) from a connected machine."
        ) from exc
