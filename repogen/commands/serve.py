"""``repogen serve``: run a stock tritonserver on a repository in the foreground."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import click

from ..built.repository import require_directory
from ..errors import RepogenError
from ..server.foreground import ExternalTritonServer, ServeError, embedded_server, find_tritonserver, run_server
from ..server.process import HOST, TritonServer, free_ports
from ..triton.endpoints import DEFAULT_PORTS
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED, Release
from .params import TritonRelease


def _echo(line: str) -> None:
    click.echo(line)


def _ports(http: int | None, grpc: int | None, metrics: int | None) -> tuple[int, int, int]:
    """Triton's usual ports by default; 0 picks a free one. A busy port is named before starting."""
    chosen = [p if p is not None else d for p, d in zip((http, grpc, metrics), DEFAULT_PORTS.values(), strict=True)]
    free = iter(free_ports(3))
    http_port, grpc_port, metrics_port = (p or next(free) for p in chosen)
    for port, what in ((http_port, "http"), (grpc_port, "grpc"), (metrics_port, "metrics")):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((HOST, port))
            except OSError as exc:
                raise ServeError(
                    f"{what} port {port} on {HOST} is not available ({exc.strerror}); pass --{what}-port N "
                    "(0: any free port) or stop what is using it."
                ) from exc
    return http_port, grpc_port, metrics_port


_EMBEDDED = ", ".join(r.tritonserver for r in EMBEDDED)


@click.command()
@click.argument("repository", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--triton-version",
    type=TritonRelease(),
    help=f"Embedded tritonserver release; implies the embedded server. Any release name is understood, but only "
    f"{_EMBEDDED} ship in a PyPI wheel that can be embedded (others: --tritonserver PATH). "
    f"Default {DEFAULT_RELEASE.tritonserver}.",
)
@click.option(
    "--server-python",
    metavar="X.Y",
    help="Python the embedded server runs models with (3.10, 3.12, ...); implies the embedded server. "
    "Default: the release's NGC container Python (3.10 for 24.10) when installed, else this Python.",
)
@click.option("--http-port", type=int, help=f"HTTP port on {HOST} (default {DEFAULT_PORTS['http']}; 0: any free port).")
@click.option("--grpc-port", type=int, help=f"gRPC port on {HOST} (default {DEFAULT_PORTS['grpc']}; 0: any free port).")
@click.option(
    "--metrics-port", type=int, help=f"Metrics port on {HOST} (default {DEFAULT_PORTS['metrics']}; 0: any free port)."
)
@click.option(
    "--tritonserver",
    "tritonserver_path",
    type=click.Path(dir_okay=False),
    help="A tritonserver binary to run (default: `tritonserver` on PATH, else the embedded one).",
)
@click.option("--embedded", is_flag=True, help="Use the embedded tritonserver even if one is on PATH.")
@click.option("--ready-timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for readiness.")
@click.option("--log-verbose", type=int, default=0, show_default=True, help="tritonserver --log-verbose level.")
def serve(
    repository: Path,
    triton_version: Release | None,
    server_python: str | None,
    http_port: int | None,
    grpc_port: int | None,
    metrics_port: int | None,
    tritonserver_path: str | None,
    embedded: bool,
    ready_timeout: float,
    log_verbose: int,
) -> None:
    """Serve REPOSITORY with a stock tritonserver on 127.0.0.1 until Ctrl+C (or SIGTERM).

    The embedded server (the unmodified tritonserver from PyPI's nvidia-pytriton wheel) is
    installed into the cache on first use ($REPOGEN_CACHE_DIR, default ~/.cache/repogen) and
    runs models from a venv holding numpy only, like an NGC container, of that container's Python.
    """
    require_directory(repository)
    ports = _ports(http_port, grpc_port, metrics_port)
    log_path = Path(tempfile.mkdtemp(prefix="repogen-serve-")) / "tritonserver.log"
    try:
        embedded = embedded or bool(triton_version) or bool(server_python)
        if tritonserver_path and embedded:
            raise ServeError(
                "--tritonserver runs the binary you name (with its own Python); --triton-version/--server-python/"
                "--embedded select the embedded server. Pass one or the other."
            )
        external = None if embedded else find_tritonserver(tritonserver_path)
        server: TritonServer
        if external is not None:
            click.echo(f"Using {external}")
            server = ExternalTritonServer(
                external, repository, http_port=ports[0], grpc_port=ports[1], metrics_port=ports[2],
                log_verbose=log_verbose, log_path=log_path,
            )  # fmt: skip
            version = str(external)
        else:
            install, venv = embedded_server(triton_version, _echo, server_python)
            server = TritonServer(
                repository, install, venv, http_port=ports[0], grpc_port=ports[1], metrics_port=ports[2],
                log_verbose=log_verbose, log_path=log_path,
            )  # fmt: skip
            version = install.release.tritonserver
        run_server(server, version, _echo, ready_timeout=ready_timeout)
    except RepogenError:
        if not log_path.exists():  # failed before starting: nothing worth keeping
            shutil.rmtree(log_path.parent, ignore_errors=True)
        raise
    shutil.rmtree(log_path.parent, ignore_errors=True)  # kept when serving failed: the error names it


COMMANDS = [serve]
