"""``Triton`` (and ``TritonConfig``, from triton_config.py): PyTriton's ``server.py`` as people copy it, after the
import swap.

``Triton`` is a :class:`~repogen.dsl.repository.Repository` (``bind``, ``model`` and ``ensemble`` as there, and
``repogen build server.py:triton`` where it sits at module level) that also runs itself: :meth:`Triton.run`
builds it and starts the stock tritonserver ``repogen serve`` runs. The DSL imports no build or server code:
``repogen`` registers who runs it (``dsl/runners.py``), as it does the in-process runner.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import pathlib
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Protocol

from ..errors import UsageError
from . import runners
from .config import ServerOptions
from .repository import Repository
from .triton_config import LOOPBACK, TritonConfig, TritonLifecyclePolicy, TritonSecurityConfig

__all__ = [
    "LOOPBACK", "Triton", "TritonConfig", "TritonLifecyclePolicy", "TritonSecurityConfig", "loading_app",
]  # fmt: skip


class ServedRepository(Protocol):
    """What the server runner (``dsl/runners.py``) returns: the server it started, stopped by :meth:`stop`."""

    def stop(self) -> None: ...

    def is_alive(self) -> bool: ...


_loading_apps = 0


@contextmanager
def loading_app() -> Iterator[None]:
    """While ``repogen build`` (``serve``, ``tune``) imports an app: :meth:`Triton.run` refuses there, so that
    building PyTriton's ``server.py`` fails naming the fix instead of starting a server inside the build."""
    global _loading_apps
    _loading_apps += 1
    try:
        yield
    finally:
        _loading_apps -= 1


class _Stop(Exception):
    """SIGTERM, in :meth:`Triton.serve`: ends the wait as Ctrl+C's KeyboardInterrupt does."""


class Triton(Repository):
    """PyTriton's ``Triton``: bind models, then :meth:`run` or :meth:`serve` them on a stock tritonserver.

    ``with Triton(config=TritonConfig(...)) as triton: triton.bind(...); triton.serve()`` works as in PyTriton:
    :meth:`serve` builds the models bound (into a temporary directory of its own, deterministically, as
    ``repogen build`` does), starts the embedded stock tritonserver ``repogen serve`` starts (installed into
    ``~/.cache/repogen`` on first use) on 127.0.0.1 and the config's ports, and serves until SIGINT or SIGTERM.
    Your process only waits: the callables run inside the server's Python backend. ``triton_release`` and
    ``server_python`` (repogen's own) pick the server as ``repogen serve --triton-release/--server-python``.
    As PyTriton's, it reads ``PYTRITON_TRITON_CONFIG_*`` variables under the fields ``config`` sets
    (:meth:`TritonConfig.from_env`), and its restricted endpoints take the key of ``security_config``
    (:class:`TritonSecurityConfig`; by default PyTriton 0.7's endpoints and a key made here).
    """

    def __init__(
        self,
        *,
        config: TritonConfig | None = None,
        workspace: str | pathlib.Path | None = None,
        triton_lifecycle_policy: TritonLifecyclePolicy | None = None,
        security_config: TritonSecurityConfig | None = None,
        triton_release: str | None = None,
        server_python: str | None = None,
    ) -> None:
        super().__init__()
        if triton_lifecycle_policy is not None:
            triton_lifecycle_policy.check()
        if workspace is not None:
            raise UsageError(
                "Triton(workspace=...) cannot apply: repogen builds into a temporary directory of its own, removed "
                "on stop(); to keep the repository: repogen build server.py:triton -o DIR"
            )
        explicit = {k: v for k, v in (config or TritonConfig()).to_dict().items() if v is not None}
        # As PyTriton: the config given, over PYTRITON_TRITON_CONFIG_* variables, over the defaults.
        self.config = dataclasses.replace(TritonConfig.from_env(), **explicit)
        cache = self.config.cache_bytes()  # the build records the cache the server runs with
        self.server_options = ServerOptions(response_cache_byte_size=cache) if cache else None
        self.security_config = security_config if security_config is not None else TritonSecurityConfig()
        """As PyTriton 0.7's: the key, made now where none is given, and the endpoints it guards."""
        self.triton_release = triton_release
        self.server_python = server_python
        self._served: ServedRepository | None = None
        self._bound_before_stop: set[tuple[str, int]] = set()
        """The models (name, version) bound before a :meth:`stop`: binding one again replaces it."""

    def run(self) -> None:
        """Build the models bound and start the server; return once every model is loaded.

        A declaration the build refuses raises the :class:`~repogen.errors.BuildError` ``repogen build`` prints;
        a server that cannot start or load a model, :class:`~repogen.errors.ServeError`. Either leaves nothing
        running.
        """
        if _loading_apps:
            raise UsageError(
                "Triton.run()/serve() was called while repogen imports this module to build it: keep the binds at "
                'module level and serve only when the file is run, under `if __name__ == "__main__":` '
                "(with triton: triton.serve())"
            )
        if self._served is not None:
            raise UsageError("this Triton is running already; stop() it first")
        run = runners.server_runner()
        dataclasses.replace(self.config)  # its fields checked again: one set after it was made is refused too
        self._served = run(self)
        atexit.register(self.stop)  # as PyTriton: a run() never stopped ends with this process

    def serve(self, monitoring_period_s: float = 1.0) -> None:
        """:meth:`run`, then wait until SIGINT (Ctrl+C) or SIGTERM, or the server's end; then :meth:`stop`."""
        try:
            with _sigterm_interrupts():  # from the build on: a SIGTERM while the server starts leaves nothing either
                self.run()
                logging.getLogger("repogen.triton").info("Press Ctrl+C to stop.")
                while self.is_alive():
                    threading.Event().wait(monitoring_period_s)
        except (KeyboardInterrupt, _Stop):
            pass
        finally:
            self.stop()

    def stop(self) -> bool:
        """Stop the server (every instance's ``finalize`` runs) and remove the built repository; ``False`` if
        nothing was running."""
        served, self._served = self._served, None
        if served is None:
            return False
        atexit.unregister(self.stop)
        served.stop()
        self._bound_before_stop |= {(definition.name, definition.version) for definition in self.definitions}
        return True

    def _before_bind(self, model_name: str, model_version: int) -> None:
        """As PyTriton's after a :meth:`stop`: a model bound again replaces its earlier binding (PyTriton's notebook
        redefines its callable so: stop, bind anew, run). PyTriton's stop forgets every model; here those not bound
        again stay bound, and the next :meth:`run` serves them too."""
        if self._served is not None:
            raise UsageError(
                f"Triton.bind(model_name={model_name!r}) while the server runs: its models are built once, at "
                "run(); bind every model before run(), or stop() first and run() again"
            )
        key = (model_name, model_version)
        if key in self._bound_before_stop:
            self._bound_before_stop.discard(key)
            self._definitions[:] = [d for d in self._definitions if (d.name, d.version) != key]

    def get_access_token(self) -> str | None:
        """PyTriton 0.7's: the key the server's restricted endpoints take (header ``triton-access-token``), known
        from construction on; None where ``TritonSecurityConfig(restricted_endpoints=[])`` restricts nothing."""
        return self.security_config.access_token

    def is_alive(self) -> bool:
        """Whether the server :meth:`run` started is running."""
        return self._served is not None and self._served.is_alive()

    def __enter__(self) -> Triton:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`_Stop`, and SIGINT KeyboardInterrupt even where it was inherited ignored, while the
    block runs (in the main thread; elsewhere both are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, stop)
    # Started with SIGINT ignored (`python server.py &` in a script), Python raises no KeyboardInterrupt: serve()
    # takes SIGINT back, as `repogen serve` does (repogen/cli.py), so Ctrl+C and `kill -INT` stop it in every case.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
