"""``repogen serve``: a stock tritonserver in the foreground, for development.

The server runs in its own process group (see :class:`~repogen.server.running.server_process.ServerProcess`);
this module streams its log, prints the endpoints and a working ``curl`` once it is ready, and
turns SIGINT/SIGTERM into a graceful stop that leaves no server or backend stub behind — a
second signal during the stop kills the whole group at once.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, TextIO

from ...errors import ServeError
from ...triton.access import GRPC_FLAG, HTTP_FLAG
from ...triton.releases import DEFAULT_RELEASE, Release, get_release, no_wheel, pairing_label
from ..client.access import forget_run, record_run
from ..client.states import failed, failure_lines, model_states
from ..provision.install import (
    INSTALL_MARKER,
    ServerInstall,
    ServerInstallError,
    VenvInfo,
    default_cache_dir,
    ensure_server,
    ensure_server_venv,
    venv_info,
)
from ..provision.progress import DownloadProgress, progress
from ..provision.pythons import PythonNotFoundError, container_python_or_current, require_python
from .banner import ready_banner, sample_curl
from .server_process import ServerProcess, TritonServerError

__all__ = [
    "ExternalTritonServer",
    "ServeError",
    "embedded_server",
    "find_tritonserver",
    "ready_banner",
    "run_server",
    "sample_curl",
]

# Once every stub has exited (its models unloaded, finalize run), tritonserver only closes its endpoints in 1 s
# ticks: it is ended then, without a grace period. What Ctrl+C costs (measured on 2.51, docs/deployment.md):
# the Python backend sleeps 1 s in every instance's unload before it sends the stub its finalize request.
UNLOADED_GRACE = 0.0

Echo = Callable[[str], None]
Tick = Callable[[Echo], None]


class _Stop(KeyboardInterrupt):
    """SIGTERM (or SIGINT) asked the foreground server to stop.

    A ``KeyboardInterrupt`` so that, raised while tritonclient's HTTP client waits in gevent's hub,
    gevent hands it to the main greenlet instead of printing and dropping it.
    """


# --------------------------------------------------------------------------- which server


class ExternalTritonServer(ServerProcess):
    """A tritonserver the user installed (``--tritonserver``, or found on PATH).

    It uses its own backends and Python backend stub, so it runs with the caller's environment
    unchanged: the managed numpy-only venv only pairs with the embedded server's stubs.
    """

    def __init__(self, binary: Path, model_repository: str | Path, **kwargs: Any) -> None:
        self.binary = binary
        self._restricts: dict[str, bool] | None = None
        super().__init__(model_repository, **kwargs)

    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--model-repository={self.model_repository}",
            *self.loopback_args(),
            *self.restriction_args(),
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def restricts(self) -> dict[str, bool]:
        """Its release is unknown: what its ``--help`` lists (2.39 has no HTTP flag), read once."""
        if self._restricts is None:
            self._restricts = help_restricts(self.binary, self.environment())
        return self._restricts

    def __repr__(self) -> str:
        return f"ExternalTritonServer({self.binary}, {self.model_repository})"


def help_restricts(binary: Path, env: dict[str, str]) -> dict[str, bool]:
    """Which restriction flags a tritonserver binary lists in its ``--help`` (none if it does not answer)."""
    try:  # tritonserver prints its usage on stderr and exits 1
        done = subprocess.run([str(binary), "--help"], env=env, capture_output=True, text=True, timeout=30, check=False)
        text = done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError):
        text = ""
    return {"http": HTTP_FLAG in text, "grpc": GRPC_FLAG in text}


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


# --------------------------------------------------------------------------- the foreground loop


class _LogPump:
    """Copies what the server appends to its log file onto ``out``, except tritonserver's ``--help`` text.

    tritonserver answers a bad argument with its whole usage (~300 lines); from ``Usage:`` on the log is
    held back, and :func:`_exited` quotes the lines that say what was wrong instead.
    """

    def __init__(self, path: Path, out: TextIO) -> None:
        self.path, self.out = path, out
        self._file: BinaryIO | None = None
        self._partial = b""
        self.usage = False

    def pump(self) -> None:
        if self._file is None:
            try:
                self._file = self.path.open("rb")
            except FileNotFoundError:
                return
        chunk = self._partial + self._file.read()
        if not chunk or self.usage:
            return
        lines = chunk.splitlines(keepends=True)
        self._partial = lines.pop() if not lines[-1].endswith(b"\n") else b""
        for index, line in enumerate(lines):
            if line.startswith(b"Usage: "):
                self.usage = True
                lines = lines[:index]
                break
        if lines:
            self.out.write(b"".join(lines).decode(errors="replace"))
            self.out.flush()

    def close(self) -> None:
        if self._partial and not self.usage:
            self.out.write(self._partial.decode(errors="replace"))
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


def _stop(server: ServerProcess, echo: Echo, explicit: bool = False) -> None:
    """Graceful stop; a further SIGINT/SIGTERM kills the server's whole process group.

    ``explicit`` (the server runs with explicit model control): every model is unloaded before the SIGINT,
    so that its ``finalize`` runs even while a client holds a connection open (see ``ServerProcess.stop``).
    """

    def kill_group(signum: int, frame: FrameType | None) -> None:
        with suppress(ProcessLookupError, PermissionError, TritonServerError):
            os.killpg(server.pid, signal.SIGKILL)

    with _signals(kill_group):
        server.stop(unloaded_grace=UNLOADED_GRACE, unload_first=explicit)


def _answers(call: Callable[[], Any]) -> bool:
    try:
        return bool(call())
    except Exception:  # refused, reset or timed out while the server starts
        return False


def _wait_started(server: ServerProcess, pump: _LogPump, ready_timeout: float, poll: float) -> None:
    """Until the server answers ``/v2/health/live``: it opens its endpoints only after the first loads end."""
    deadline = time.monotonic() + ready_timeout
    with server.client(timeout=2.0) as client:
        while not _answers(client.is_server_live):
            pump.pump()
            if not server.is_running():
                raise ServeError(_exited(server, "before starting", pump))
            if time.monotonic() > deadline:
                raise ServeError(
                    f"tritonserver did not start within {ready_timeout:.0f} s (models still loading; see the log "
                    f"above, also in {server.log_path}). Pass a longer --ready-timeout."
                )
            time.sleep(poll)


def _check_loaded(server: ServerProcess, loaded: list[str] | None, keep_failed: bool, echo: Echo) -> None:
    """Name every model that failed to load, one line each: fatal, unless ``keep_failed`` (``--reload``)."""
    with server.client(timeout=10.0) as client:
        if _answers(client.is_server_ready):
            return
        try:
            states = model_states(client.get_model_repository_index())
        except Exception as exc:
            raise ServeError(f"tritonserver started but its repository index failed ({exc}); see the log.") from exc
    bad = failed(states, loaded)
    if not bad:
        return
    what = f"{len(bad)} model(s) failed to load (tracebacks in the log above, also in {server.log_path})"
    if not keep_failed:
        raise ServeError(f"{what}; fix them and serve again:\n" + "\n".join(failure_lines(bad)))
    echo(f"{what}; serving the others, and reloading on the next change:")
    for line in failure_lines(bad):
        echo(line)


def run_server(
    server: ServerProcess,
    version: str,
    echo: Echo,
    *,
    out: TextIO | None = None,
    ready_timeout: float = 300.0,
    poll: float = 0.1,
    loaded: list[str] | None = None,
    keep_failed: bool = False,
    tick: Tick | None = None,
    explicit: bool = False,
) -> None:
    """Start ``server``, stream its log, print the banner when ready, block until a signal, stop.

    ``loaded`` names the models asked for (explicit model control), ``None`` every model. A model that
    fails to load ends the run with one line per failed model, unless ``keep_failed``. ``tick(echo)``
    runs between polls (``--reload``); its ``echo`` prints after the server's pending log lines. ``explicit``:
    the server runs with explicit model control, and a stop unloads every model before the SIGINT.
    Returns after a requested stop; raises :class:`ServeError` if the server fails to start, a model
    fails to load, or the server dies on its own.
    """
    pump = _LogPump(server.log_path, out or sys.stdout)

    def echo_after_log(line: str) -> None:
        pump.pump()
        echo(line)

    run_file: Path | None = None
    with _signals(_raise_stop):
        try:
            try:
                server.start()
            except (TritonServerError, ServerInstallError, OSError) as exc:
                raise ServeError(str(exc)) from exc
            if server.access is not None:  # where repogen's client commands find the key
                run_file = record_run(server.access, (server.http_port, server.grpc_port), server.pid)
            _wait_started(server, pump, ready_timeout, poll)
            pump.pump()
            _check_loaded(server, loaded, keep_failed, echo)
            for line in ready_banner(server, version, recorded=run_file is not None):
                echo(line)
            while server.is_running():
                pump.pump()
                if tick is not None:
                    tick(echo_after_log)
                time.sleep(poll)
            pump.pump()
            raise ServeError(_exited(server, "unexpectedly", pump))
        except (_Stop, KeyboardInterrupt):
            echo("Stopping tritonserver...")
        finally:
            _stop(server, echo, explicit)
            forget_run(run_file)
            pump.pump()
            pump.close()
    echo("tritonserver stopped.")


def _error_lines(log: str) -> list[str]:
    """What tritonserver said went wrong: its error records and unindented messages, never its usage text."""
    found = []
    for line in log.splitlines():
        text = line.strip()
        if not text or line[0] in " \t|+" or text.startswith("Usage: ") or text[0] in "IW" and text[1:5].isdigit():
            continue
        found.append(text)
    return found[-3:]


def _exited(server: ServerProcess, when: str, pump: _LogPump) -> str:
    code = server.stop()  # already exited: this only reaps it and returns its exit code
    said = _error_lines(server.log_text())
    where = "" if pump.usage else " (its log is above)"
    detail = "".join(f"\n  {line}" for line in said)
    return (
        f"tritonserver exited with code {code} {when}{where}; the full log is in {server.log_path}. "
        f"It said:{detail or ' nothing'}\nFix what it names (an argument after `--`, a port, a model), "
        "or check `repogen validate` on the repository."
    )
