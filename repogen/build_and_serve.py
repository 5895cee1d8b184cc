"""What ``Triton.run()`` runs: its models built by :func:`~repogen.build.build_repository` into a temporary
directory, served by :class:`~repogen.server.running.serving.Serving` as ``repogen serve DIR`` serves it.

A thin layer: the build is ``repogen build``'s, the server (its choice, install, ports, key, graceful stop)
``repogen serve``'s; this module only maps :class:`~repogen.dsl.pytriton.TritonConfig` onto their options
and owns the temporary directory. ``repogen`` registers :func:`launch` with the DSL (``set_server_runner``).
"""

from __future__ import annotations

import io
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO, cast

from .build import build_repository
from .dsl.pytriton import Triton, TritonConfig
from .errors import RepogenError
from .server.running.serving import ServeOptions, Serving
from .triton.releases import get_release
from .triton.restricted_apis import parse_apis

__all__ = ["Launched", "launch", "serve_options"]

LOGGER = logging.getLogger("repogen.triton")
SERVER_LOG = logging.getLogger("repogen.triton.server")


class _LogLines(io.TextIOBase):
    """The server's log (and what the models print) as records of ``repogen.triton.server``, one a line: at INFO,
    as PyTriton's examples configure logging, so a callable's ``print`` shows where it did under PyTriton."""

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                SERVER_LOG.info("%s", line)
        return len(text)


def serve_options(triton: Triton, repository: Path) -> ServeOptions:
    """``repogen serve REPOSITORY``'s options for ``triton``'s config: ports, log level, the server it names,
    its security config's key and restricted APIs, the config's other tritonserver options after ``--``."""
    config: TritonConfig = triton.config
    security = triton.security_config
    return ServeOptions(
        str(repository),
        tritonserver_args=tuple(config.server_arguments()),
        http_port=config.http_port,
        grpc_port=config.grpc_port,
        metrics_port=config.metrics_port,
        triton_release=get_release(triton.triton_release) if triton.triton_release else None,
        server_python=triton.server_python,
        log_verbose=config.log_verbose or 0,
        restrict=parse_apis(security.restricted_endpoints) if security.restricted_endpoints else (),
        token=security.access_token,
    )


def project_root(triton: Triton) -> Path:
    """The user's project, whose modules ship with the models: the directory of the module that bound the first
    model (``__main__``'s, else the working directory, when no site is known or models were bound in cells)."""
    sites = [declared.site for group in (triton.definitions, triton.ensembles, triton.networks, triton.included)
             for declared in group]  # fmt: skip
    for site in sites:
        if site is not None and not site.in_cell:
            return Path(site.file).resolve().parent
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return Path(main).resolve().parent if main else Path.cwd()


class Launched:
    """A :class:`Triton` built into a temporary directory and served; :meth:`stop` ends both."""

    def __init__(self, triton: Triton) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="repogen-triton-"))
        self.serving: Serving | None = None
        try:
            repository = self.directory / "model_repository"
            build_repository(triton, repository, roots=(str(project_root(triton)),))
            out = cast(TextIO, _LogLines())
            self.serving = Serving(serve_options(triton, repository), echo=LOGGER.info, out=out)
            self.serving.start()
        except BaseException:
            self.stop()
            raise
        for line in self.serving.banner():
            if not line.startswith("Press Ctrl+C"):  # run() returns; serve() says how it stops
                LOGGER.info(line)

    def is_alive(self) -> bool:
        """Whether the server runs; its new log lines are logged as it is asked (``serve()`` asks once a second)."""
        if self.serving is None:
            return False
        try:
            self.serving.poll()
        except RepogenError as exc:  # it exited on its own: say what it said
            LOGGER.error("%s", exc)
            return False
        return True

    def stop(self) -> None:
        serving, self.serving = self.serving, None
        try:
            if serving is not None:
                serving.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def launch(triton: Triton) -> Launched:
    """Build ``triton`` and serve it until :meth:`Launched.stop`."""
    return Launched(triton)
