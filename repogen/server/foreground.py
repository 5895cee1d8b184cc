"""``repogen serve``: a stock tritonserver in the foreground, for development.

The server runs in its own process group (see :class:`~repogen.server.process.TritonServer`);
this module streams its log, prints the endpoints and a working ``curl`` once it is ready, and
turns SIGINT/SIGTERM into a graceful stop that leaves no server or backend stub behind — a
second signal during the stop kills the whole group at once.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, TextIO

from ..errors import RepogenError
from ..triton.endpoints import HTTP_PORT, infer_path
from ..triton.releases import DEFAULT_RELEASE, Release, get_release, no_wheel, pairing_label
from .infer import sample_value
from .install import (
    INSTALL_MARKER,
    ServerInstall,
    ServerInstallError,
    VenvInfo,
    default_cache_dir,
    ensure_server,
    ensure_server_venv,
    venv_info,
)
from .process import HOST, TritonServer, TritonServerError, http_client, is_ready
from .progress import progress
from .pythons import PythonNotFoundError, container_python_or_current, require_python

__all__ = ["ExternalTritonServer", "ServeError", "embedded_server", "find_tritonserver", "run_server", "sample_curl"]

Echo = Callable[[str], None]


class ServeError(RepogenError):
    """The server could not be installed, started or kept running; the message says what to do."""


class _Stop(KeyboardInterrupt):
    """SIGTERM (or SIGINT) asked the foreground server to stop.

    A ``KeyboardInterrupt`` so that, raised while tritonclient's HTTP client waits in gevent's hub,
    gevent hands it to the main greenlet instead of printing and dropping it.
    """


# --------------------------------------------------------------------------- which server


class ExternalTritonServer(TritonServer):
    """A tritonserver the user installed (``--tritonserver``, or found on PATH).

    It uses its own backends and Python backend stub, so it runs with the caller's environment
    unchanged: the managed numpy-only venv only pairs with the embedded server's stubs.
    """

    def __init__(self, binary: Path, model_repository: str | Path, **kwargs: Any) -> None:
        self.binary = binary
        placeholder_venv = VenvInfo(Path(sys.prefix), "", "", "")
        super().__init__(model_repository, ServerInstall(DEFAULT_RELEASE, binary.parent), placeholder_venv, **kwargs)

    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--model-repository={self.model_repository}",
            *(f"--{endpoint}-address={HOST}" for endpoint in ("http", "grpc", "metrics")),
            f"--http-port={self.http_port}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={self.metrics_port}",
            f"--log-verbose={self.log_verbose}",
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def __repr__(self) -> str:
        return f"ExternalTritonServer({self.binary}, {self.model_repository})"


def find_tritonserver(explicit: str | None) -> Path | None:
    """``--tritonserver PATH`` (must exist and be executable), else ``tritonserver`` on PATH, else ``None``."""
    if explicit:
        path = Path(explicit).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ServeError(
                f"--tritonserver {explicit}: no executable file there; expected the path of a tritonserver "
                "binary (e.g. /opt/tritonserver/bin/tritonserver). Omit it to use the embedded server."
            )
        return path.resolve()
    found = shutil.which("tritonserver")
    return Path(found).resolve() if found else None


def _server_python(release: Release, wanted: str | None) -> tuple[Path, str, str | None]:
    """``--server-python`` (must be installed), else the release's container Python, else this one and a note."""
    if wanted is None:
        return container_python_or_current(release)
    if wanted not in release.stub_pythons:
        raise ServeError(
            f"--server-python {wanted}: tritonserver {release.tritonserver} (NGC {release.ngc}) has backend stubs for "
            f"Python {', '.join(release.stub_pythons)}. Pick one of those (its NGC container runs "
            f"{release.python}), or another --triton-version."
        )
    try:
        return require_python(wanted), wanted, None
    except (PythonNotFoundError, ValueError) as exc:
        raise ServeError(f"--server-python {wanted}: {exc}") from exc


def embedded_server(
    release_key: str | Release | None, echo: Echo, server_python: str | None = None
) -> tuple[ServerInstall, VenvInfo]:
    """The stock tritonserver from the ``nvidia-pytriton`` wheel plus a numpy-only venv, installed once.

    The venv runs ``server_python`` (``major.minor``), by default the Python of the release's NGC
    container when it is installed, so development serves the pairing production runs. A release no
    wheel ships is refused here, naming the ones that can be embedded.
    """
    release = get_release(release_key or DEFAULT_RELEASE)
    if release.wheel is None:
        raise ServeError(
            f"--triton-version {release.ngc}: {no_wheel(release)}. Pass one of those, or run {release.label}'s own "
            f"binary with --tritonserver PATH (e.g. inside {release.image})."
        )
    python, python_version, fallback = _server_python(release, server_python)
    echo(fallback or f"Serving with {pairing_label(release, python_version)}.")
    cache = default_cache_dir()
    try:
        if not (cache / f"tritonserver-{release.tritonserver}" / INSTALL_MARKER).is_file():
            echo(
                f"First use of tritonserver {release.tritonserver} (NGC {release.ngc}): installing it into {cache} "
                f"from {release.wheel.requirement} on your package index (~55 MB download, sha256-checked)."
            )
        with progress(f"installing tritonserver {release.tritonserver}"):
            install = ensure_server(release, cache_dir=cache)
        with progress("preparing the numpy-only server venv"):
            venv = ensure_server_venv(python=python, numpy=release.numpy, cache_dir=cache)
        return install, venv_info(venv)
    except ServerInstallError as exc:
        raise ServeError(
            f"{exc}\nOffline? Point --tritonserver at an installed tritonserver binary, or copy a populated "
            f"{cache} (REPOGEN_CACHE_DIR) from a connected machine."
        ) from exc


# --------------------------------------------------------------------------- readiness and hints


def sample_curl(http_url: str, model: str, metadata: dict[str, Any]) -> str:
    """A real request for ``model`` built from its metadata: every input, shape with -1 as 1."""
    inputs = []
    for tensor in metadata.get("inputs", []):
        shape = [1 if int(d) < 0 else int(d) for d in tensor["shape"]]
        count = 1
        for dim in shape:
            count *= dim
        value = sample_value(tensor["datatype"])
        inputs.append({"name": tensor["name"], "shape": shape, "datatype": tensor["datatype"], "data": [value] * count})
    body = json.dumps({"inputs": inputs}, separators=(",", ":"))
    return f"curl -s {http_url}{infer_path(model)} -d {shlex.quote(body)}"


def _sample_infer(model: str, metadata: dict[str, Any], http_port: int) -> str:
    parts = ["repogen", "infer", model]
    for tensor in metadata.get("inputs", []):
        value = json.dumps(sample_value(tensor["datatype"]))
        parts += ["--input", f"{tensor['name']}={value}"]
    if http_port != HTTP_PORT:
        parts += ["--url", f"127.0.0.1:{http_port}"]
    return " ".join(shlex.quote(p) for p in parts)


def _index_and_metadata(server: TritonServer) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The repository index (sorted by name) and the first ready model's metadata; empty where unanswered."""
    with http_client(server.http_url, timeout=2.0) as client:
        try:
            index = sorted(client.get_model_repository_index(), key=lambda m: m.get("name", ""))
        except Exception:  # the banner is a courtesy: never fail serving over it
            return [], None
        ready = [m["name"] for m in index if m.get("state") == "READY"]
        try:
            return index, client.get_model_metadata(ready[0]) if ready else None
        except Exception:
            return index, None


def ready_banner(server: TritonServer, version: str) -> list[str]:
    """Endpoints, model states and sample requests, as printed once the server is ready."""
    models, metadata = _index_and_metadata(server)
    ready = [m["name"] for m in models if m.get("state") == "READY"]
    lines = [
        f"tritonserver {version} ready (pid {server.pid}), serving {len(ready)} model(s) from "
        f"{server.model_repository}: {', '.join(ready) or 'none'}",
        f"  HTTP     http://{server.http_url}",
        f"  gRPC     {server.grpc_url}",
        f"  metrics  {server.metrics_url}",
    ]
    for model in models:
        if model.get("state") != "READY":
            lines.append(f"  not ready: {model.get('name')} ({model.get('state')}: {model.get('reason', '')})")
    if ready and metadata:
        lines += [
            "Try:",
            f"  {sample_curl(server.http_url, ready[0], metadata)}",
            f"  {_sample_infer(ready[0], metadata, server.http_port)}",
        ]
    lines.append("Press Ctrl+C to stop.")
    return lines


# --------------------------------------------------------------------------- the foreground loop


class _LogPump:
    """Copies what the server appends to its log file onto ``out``."""

    def __init__(self, path: Path, out: TextIO) -> None:
        self.path, self.out = path, out
        self._file: BinaryIO | None = None

    def pump(self) -> None:
        if self._file is None:
            try:
                self._file = self.path.open("rb")
            except FileNotFoundError:
                return
        chunk = self._file.read()
        if chunk:
            self.out.write(chunk.decode(errors="replace"))
            self.out.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


@contextmanager
def _signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def _stop(server: TritonServer, echo: Echo) -> None:
    """Graceful stop; a further SIGINT/SIGTERM kills the server's whole process group."""

    def kill_group(signum: int, frame: FrameType | None) -> None:
        with suppress(ProcessLookupError, PermissionError, TritonServerError):
            os.killpg(server.pid, signal.SIGKILL)

    with _signals(kill_group):
        server.stop()


def run_server(
    server: TritonServer,
    version: str,
    echo: Echo,
    *,
    out: TextIO | None = None,
    ready_timeout: float = 300.0,
    poll: float = 0.1,
) -> None:
    """Start ``server``, stream its log, print the banner when ready, block until a signal, stop.

    Returns after a requested stop; raises :class:`ServeError` if the server fails to start,
    does not become ready, or dies on its own.
    """
    pump = _LogPump(server.log_path, out or sys.stdout)
    with _signals(_raise_stop):
        try:
            try:
                server.start()
            except (TritonServerError, ServerInstallError, OSError) as exc:
                raise ServeError(str(exc)) from exc
            deadline = time.monotonic() + ready_timeout
            with http_client(server.http_url, timeout=2.0) as client:
                while not is_ready(client):
                    pump.pump()
                    if not server.is_running():
                        raise ServeError(_exited(server, "before becoming ready"))
                    if time.monotonic() > deadline:
                        raise ServeError(
                            f"tritonserver was not ready after {ready_timeout:.0f} s (models still loading or "
                            f"failing; see the log above, also in {server.log_path}). Pass a longer --ready-timeout."
                        )
                    time.sleep(poll)
            pump.pump()
            for line in ready_banner(server, version):
                echo(line)
            while server.is_running():
                pump.pump()
                time.sleep(poll)
            pump.pump()
            raise ServeError(_exited(server, "unexpectedly"))
        except (_Stop, KeyboardInterrupt):
            echo("Stopping tritonserver...")
        finally:
            _stop(server, echo)
            pump.pump()
            pump.close()
    echo("tritonserver stopped.")


def _exited(server: TritonServer, when: str) -> str:
    code = server.stop()  # already exited: this only reaps it and returns its exit code
    return (
        f"tritonserver exited with code {code} {when}; its log is above (also in {server.log_path}). "
        "Fix the failing model it names, or check `repogen validate` on the repository."
    )
