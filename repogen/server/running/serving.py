"""``repogen serve`` as a library: a target served by one stock tritonserver on loopback until it is stopped.

:class:`Serving` is what the command runs (:meth:`Serving.run`: in the foreground, the server's log copied
out, until Ctrl+C or SIGTERM) and what tests and tools start in-process (``with Serving(options) as
serving:``). It holds everything around the server process: the app built into scratch space and, with
``reload``, rebuilt on a change (reload.py); a signed repository checked; the server chosen (a container
image, the user's binary or the embedded one: choice.py); the models it loads; the run's access key and the
file where repogen's commands find it. However it ends (an error, Ctrl+C during the build), nothing of it
stays but the server log an error names.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TextIO

from ...errors import RepogenError, RepositoryError, ServeError, UsageError
from ...ondisk.reader import model_dirs, read_repository
from ...runtime.contract.tritonserver_flags import given_by
from ...triton.gpus import GpuQueryError, visible_gpus
from ..client.access_key import Access, forget_run, record_run
from ..client.states import ModelState, model_states
from ..provision.install import ServerInstallError
from .backends import serve_without, unservable
from .banner import ready_banner
from .choice import choose_ports, choose_server
from .foreground import LogPump, check_loaded, exited, stop_gracefully, stopped_by_signals, wait_started
from .reload import AppBuild, Reloader, check_models
from .serve_options import ServeOptions
from .server_process import ServerProcess, TritonServerError
from .target import clear_scratch, repository_for

__all__ = ["ServeOptions", "Serving", "ServingStatus"]

Echo = Callable[[str], None]

POLL_S = 0.1
"""How often the server is asked whether it started, and its log copied out while it serves."""

LOG_NAME = "tritonserver.log"


def _quiet(line: str) -> None:
    """What a :class:`Serving` made without ``echo`` does with the lines ``repogen serve`` prints."""


def repository_arguments(repository: Path, given: Sequence[str]) -> list[str]:
    """The tritonserver options the repository's models depend on (``repogen inspect`` lists them: the response
    cache, the rate limiter, the CUDA memory pool), less those the arguments after ``--`` set themselves; a
    :class:`ServeError` naming each model that needs more GPUs than this machine has, before any server starts.
    A directory that is no repository is left to the checks that name what is wrong with it."""
    try:
        info = read_repository(repository)
    except RepositoryError:
        return []
    if info.uses_gpu:
        try:
            visible = len(visible_gpus())
        except GpuQueryError as exc:
            raise ServeError(f"repository {repository} has GPU models, but {exc}") from exc
        shortfalls = info.gpu_shortfalls(visible)
        if shortfalls:
            raise ServeError("\n".join(shortfalls))
    return [option.arg for option in info.server_options if not given_by(given, option.flag, option.value)]


@dataclass(frozen=True)
class ServingStatus:
    """Where a :class:`Serving` stands: its server process, its endpoints and its repository index."""

    running: bool
    pid: int | None
    version: str
    """The server as the banner names it (``2.51.0``, a binary's path, ``2.51.0 in IMAGE``)."""
    repository: Path | None
    http_url: str | None
    grpc_url: str | None
    metrics_url: str | None
    models: tuple[ModelState, ...]
    """Each model's state in the server's repository index; empty while the server does not answer."""


class Serving:
    """A target served by one tritonserver on loopback: :meth:`start`, :meth:`reload`, :meth:`status`,
    :meth:`stop` (or ``with``), and :meth:`run` in the foreground as ``repogen serve`` does.

    ``echo`` gets the lines ``repogen serve`` prints (none by default); ``out``, the server's log as it is
    written (by default it stays in its file). Options that contradict each other raise
    :class:`~repogen.errors.UsageError` here, before anything is built or started. A Serving serves once.
    """

    def __init__(self, options: ServeOptions, echo: Echo | None = None, out: TextIO | None = None) -> None:
        options.check()
        self.options = options
        self.echo = echo or _quiet
        self.out = out
        self.server: ServerProcess | None = None
        self.version = ""
        self.repository: Path | None = None
        self.loaded: list[str] | None = None
        """The models loaded under explicit model control; ``None``: every model."""
        self.explicit = options.explicit
        self._used = self._stopped = False
        self._scratch: Path | None = None
        self._keep: Path | None = None
        self._build: AppBuild | None = None
        self._reloader: Reloader | None = None
        self._pump: LogPump | None = None
        self._run_file: Path | None = None

    # ------------------------------------------------------------------ the lifecycle

    def start(self) -> Serving:
        """Build and check the target, start its server, and return once it serves: every model it loads
        loaded, or each failure named (a :class:`ServeError` unless ``reload``). A failure leaves nothing running."""
        try:
            self._prepare()
            self._launch()
        except BaseException as exc:
            self._end(exc)
            raise
        return self

    def stop(self) -> None:
        """Stop the server gracefully (every instance's ``finalize`` runs) and remove the scratch space."""
        self._end(None)

    def run(self) -> None:
        """``repogen serve``: start, print the banner, serve until SIGINT or SIGTERM, stop.

        Returns after a requested stop; raises :class:`ServeError` if the server fails to start, a model fails
        to load, or the server dies on its own.
        """
        try:
            self._prepare()
            with stopped_by_signals():
                try:
                    self._launch()
                    for line in self.banner():
                        self.echo(line)
                    while True:
                        self.poll()
                        time.sleep(POLL_S)
                except KeyboardInterrupt:  # SIGTERM's Stop is one too
                    self.echo("Stopping tritonserver...")
                finally:
                    self._stop_server()
            self.echo("tritonserver stopped.")
        except RepogenError:
            self._keep_log()
            raise
        finally:
            self._release()

    def __enter__(self) -> Serving:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end(exc)

    # ------------------------------------------------------------------ while it serves

    def banner(self) -> list[str]:
        """Endpoints, the key, model states and two requests that work: what ``repogen serve`` prints once ready."""
        return ready_banner(self._started()[0], self.version, recorded=self._run_file is not None)

    def poll(self) -> None:
        """Copy the server's new log lines out and apply the changes seen under the app (``reload``).

        Raises :class:`ServeError`, with what the server said, when it has exited on its own.
        """
        server, pump = self._started()
        if not server.is_running():
            pump.pump()
            raise ServeError(exited(server, "unexpectedly", pump))
        pump.pump()
        if self._reloader is not None:
            self._reloader.tick(self._echo_after_log)

    def reload(self) -> None:
        """Rebuild the app now and reload the models whose files changed, as a change under it would."""
        self._started()
        if self._reloader is None:
            raise UsageError(
                f"reload rebuilds an app served with --reload; {self.options.target!r} is served without it. "
                "Serve the app with reload=True (repogen serve APP --reload)."
            )
        self._reloader.reload(self._reloader.pending(), self._echo_after_log)

    def status(self) -> ServingStatus:
        """The server's process, endpoints and model states now."""
        server = self.server
        if server is None:
            return ServingStatus(False, None, self.version, self.repository, None, None, None, ())
        running = server.is_running()
        return ServingStatus(
            running, server.pid if running else None, self.version, self.repository, server.http_url,
            server.grpc_url, server.metrics_url, self._models(server) if running else (),
        )  # fmt: skip

    # ------------------------------------------------------------------ before the server starts

    def _prepare(self) -> None:
        """Its ports, the target's repository (an app built into scratch space), the server and its models."""
        if self._used:
            raise ServeError("this Serving has served already; make another to serve again.")
        self._used = True
        options = self.options
        ports = choose_ports(options.http_port, options.grpc_port, options.metrics_port)
        self._scratch = Path(tempfile.mkdtemp(prefix="repogen-serve-"))
        if options.image:  # --reload mounts it into the container, whose uid 1000 must enter it (mkdtemp made it 0700)
            self._scratch.chmod(0o755)
        repository = self.repository = self._repository(self._scratch)
        self.loaded = check_models(repository, options.models) if options.models else None
        load = (self.loaded or [m.name for m in model_dirs(repository) if m.has_config]) if self.explicit else []
        needed = repository_arguments(repository, options.tritonserver_args)
        if needed:
            self.echo(f"tritonserver options the models depend on: {' '.join(needed)} (repogen inspect says why)")
        arguments = [*options.server_arguments(load), *needed]
        settings = {
            "log_path": self._scratch / LOG_NAME, "log_verbose": options.log_verbose,
            "extra_args": arguments, "access": Access.choose(options.restrict, options.token),
        }  # fmt: skip
        self.server, self.version = choose_server(options, repository, ports, settings, self.echo)
        skipped = unservable(self.server, repository, self.loaded)
        if skipped:  # native-backend models the embedded server cannot load: named, and the rest served
            self.loaded = serve_without(self.server, repository, skipped, self.loaded, self.version, self.echo)
            self.explicit = True
        if options.reload and self._build is not None:
            self._reloader = Reloader(self._build, self.server, self.loaded)

    def _repository(self, scratch: Path) -> Path:
        """The directory given (its signatures checked against ``verify_key``), or the app built (once)."""
        options = self.options
        output = options.output or scratch / "model_repository"
        repository, self._build = repository_for(options.target, output, options.app_dir, self.echo)
        if self._build is None and options.verify_key is not None:  # before the server (or its install) reads it
            from ...signing import VerifyWith, verify_repository

            verified = verify_repository(repository, VerifyWith(key=options.verify_key))
            verified.raise_if_failed()
            self.echo(verified.line())
        return repository

    # ------------------------------------------------------------------ the server

    def _launch(self) -> None:
        """Start the server, record its key where repogen's commands look, wait until its first loads ended."""
        server = self.server
        if server is None:
            raise ServeError("nothing to start: the target was not prepared")
        pump = self._pump = LogPump(server.log_path, self.out)
        try:
            server.start()
        except (TritonServerError, ServerInstallError, OSError) as exc:
            raise ServeError(str(exc)) from exc
        if server.access is not None:  # where repogen's client commands find the key
            self._run_file = record_run(server.access, (server.http_port, server.grpc_port), server.pid)
        wait_started(server, pump, self.options.ready_timeout, POLL_S)
        pump.pump()
        check_loaded(server, pump, self.loaded, self.options.reload, self.echo)

    def _started(self) -> tuple[ServerProcess, LogPump]:
        if self.server is None or self._pump is None:
            raise ServeError(f"{self.options.target} is not served: call start() first (or run()).")
        return self.server, self._pump

    def _echo_after_log(self, line: str) -> None:
        """A line of ours after the server's pending log lines (a reload's, between two of its records)."""
        if self._pump is not None:
            self._pump.pump()
        self.echo(line)

    @staticmethod
    def _models(server: ServerProcess) -> tuple[ModelState, ...]:
        try:
            return tuple(model_states(server.models_status()))
        except Exception:  # not answering (yet, or any more): no state to report
            return ()

    # ------------------------------------------------------------------ however it ends

    def _end(self, error: BaseException | None) -> None:
        try:
            self._stop_server()
        finally:
            if isinstance(error, RepogenError):
                self._keep_log()
            self._release()

    def _stop_server(self) -> None:
        """A graceful stop (a second signal kills the group), the run's file removed, the log's last lines out."""
        if self.server is not None and not self._stopped:
            self._stopped = True
            stop_gracefully(self.server, self.explicit)
        forget_run(self._run_file)
        self._run_file = None
        if self._pump is not None:
            self._pump.pump()
            self._pump.close()
            self._pump = None

    def _keep_log(self) -> None:
        """Serving failed: the error names the server log, so it stays (and nothing else)."""
        if self._scratch is not None:
            self._keep = self._scratch / LOG_NAME

    def _release(self) -> None:
        if self._reloader is not None:
            self._reloader.close()
            self._reloader = None
        if self._scratch is not None:
            clear_scratch(self._scratch, self._keep)  # whatever ended it: an error, Ctrl+C during the build
            self._scratch = None
