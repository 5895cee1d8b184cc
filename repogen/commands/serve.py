"""``repogen serve``: run a stock tritonserver on a repository (or an app it builds) in the foreground."""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path

import click

from ..errors import RepogenError
from ..ondisk.repository import model_dirs, require_directory
from ..server.foreground import ExternalTritonServer, ServeError, embedded_server, find_tritonserver, run_server
from ..server.process import HOST, TritonServer, free_ports
from ..server.reload import AppBuild, Reloader, check_models
from ..triton.endpoints import DEFAULT_PORTS
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED, Release
from .params import TritonRelease

# tritonserver options `serve` sets itself → the serve option to use instead.
_MANAGED = {
    "--model-repository": "TARGET", "--model-store": "TARGET",
    "--http-port": "--http-port", "--grpc-port": "--grpc-port", "--metrics-port": "--metrics-port",
    "--http-address": f"nothing: serve binds {HOST}", "--grpc-address": f"nothing: serve binds {HOST}",
    "--metrics-address": f"nothing: serve binds {HOST}", "--backend-directory": "--tritonserver PATH",
    "--log-verbose": "--log-verbose",
}  # fmt: skip
_EXPLICIT = {"--model-control-mode": "--reload/--model", "--load-model": "--model NAME"}


def _echo(line: str) -> None:
    click.echo(line)


def _free(port: int) -> bool:
    """Whether tritonserver could listen on ``port``: bound as it binds, with SO_REUSEADDR.

    Without it, the sockets a stopped server leaves in TIME-WAIT (a minute) make the port look busy.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
            sock.listen(1)
        except OSError:
            return False
    return True


def _ports(http: int | None, grpc: int | None, metrics: int | None) -> tuple[int, int, int]:
    """Triton's usual ports by default; 0 picks a free one. A port given twice or in use is named before starting."""
    chosen = {
        what: given if given is not None else default
        for (what, default), given in zip(DEFAULT_PORTS.items(), (http, grpc, metrics), strict=True)
    }
    fixed = [(what, port) for what, port in chosen.items() if port]
    for index, (what, port) in enumerate(fixed):
        for other, other_port in fixed[index + 1 :]:
            if port == other_port:
                raise click.UsageError(
                    f"--{what}-port and --{other}-port are both {port}; each endpoint needs its own port "
                    "(0 picks a free one)."
                )
    spare = iter(p for p in free_ports(3) if p not in chosen.values())
    resolved = {what: port or next(spare) for what, port in chosen.items()}
    for what, port in resolved.items():
        if not _free(port):
            raise ServeError(
                f"{what} port {port} on {HOST} is in use by a listening process; pass --{what}-port N "
                "(0: any free port) or stop what is using it."
            )
    return resolved["http"], resolved["grpc"], resolved["metrics"]


def _check_passthrough(args: tuple[str, ...], explicit: bool) -> None:
    managed = dict(_MANAGED, **(_EXPLICIT if explicit else {}))
    for arg in args:
        option = arg.split("=", 1)[0]
        if option in managed:
            raise click.UsageError(
                f"tritonserver argument {arg!r} after `--`: repogen serve sets {option} itself; use {managed[option]} "
                "instead."
            )


def _is_app(target: str) -> bool:
    return ":" in target and not Path(target).is_dir()


_EMBEDDED = ", ".join(r.tritonserver for r in EMBEDDED)


@click.command()
@click.argument("target")
@click.argument("tritonserver_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- TRITONSERVER_ARGS]...")
@click.option("--reload", is_flag=True, help="TARGET an app: on a change under its directory, rebuild it and reload "
              "the models whose files changed, in place, without restarting the server.")  # fmt: skip
@click.option("--model", "models", multiple=True, metavar="NAME", help="Load only this model (repeatable; explicit "
              "model control). Default: every model.")  # fmt: skip
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path),
              help="TARGET an app: the directory to build it into (default: a temporary one).")  # fmt: skip
@click.option("--app-dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="TARGET an app: the project directory its own modules come from, and --reload watches.")  # fmt: skip
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
@click.option("--ready-timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for the models.")
@click.option("--log-verbose", type=int, default=0, show_default=True, help="tritonserver --log-verbose level.")
def serve(
    target: str,
    tritonserver_args: tuple[str, ...],
    reload: bool,
    models: tuple[str, ...],
    output: Path | None,
    app_dir: Path | None,
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
    """Serve TARGET with a stock tritonserver on 127.0.0.1 until Ctrl+C (or SIGTERM).

    TARGET is a built repository, or an app (path/app.py:models, package.module:models) built first.
    Arguments after `--` go to tritonserver as they are: repogen serve DIR -- --log-info=false

    The embedded server (the unmodified tritonserver from PyPI's nvidia-pytriton wheel) is
    installed into the cache on first use ($REPOGEN_CACHE_DIR, default ~/.cache/repogen) and
    runs models from a venv holding numpy only, like an NGC container, of that container's Python.
    """
    app = target if _is_app(target) else None
    if app is None and (reload or output or app_dir):
        raise click.UsageError(
            f"--reload, --output and --app-dir rebuild from an app; {target!r} is a directory. Pass the app instead: "
            "repogen serve path/app.py:models --reload"
        )
    explicit = reload or bool(models)
    _check_passthrough(tritonserver_args, explicit)
    ports = _ports(http_port, grpc_port, metrics_port)
    scratch = Path(tempfile.mkdtemp(prefix="repogen-serve-"))
    log_path = scratch / "tritonserver.log"
    reloader: Reloader | None = None
    try:
        if app is not None:
            build = AppBuild(app, (output or scratch / "model_repository").resolve(), app_dir)
            click.echo(f"Building {app} into {build.output}...")
            failure = build.run()
            if failure is not None:
                raise ServeError(failure.removeprefix("Error: "))
            repository = build.output
        else:
            repository = require_directory(target)
        loaded = check_models(repository, models) if models else None
        extra = ["--exit-on-error=false"]
        if explicit:
            names = loaded or [m.name for m in model_dirs(repository) if m.has_config]
            extra += ["--model-control-mode=explicit", *(f"--load-model={name}" for name in names)]
        extra += tritonserver_args
        server, version = _server(
            repository, ports, extra, triton_version, server_python, tritonserver_path, embedded, log_path, log_verbose
        )
        if reload and app is not None:
            reloader = Reloader(build, server, loaded)
        run_server(
            server,
            version,
            _echo,
            ready_timeout=ready_timeout,
            loaded=loaded,
            keep_failed=reload,
            tick=reloader.tick if reloader else None,
        )
    except RepogenError:
        if log_path.exists():  # serving failed: the error names the log, so keep it (and nothing else)
            shutil.rmtree(scratch / "model_repository", ignore_errors=True)
            raise
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    finally:
        if reloader is not None:
            reloader.close()
    shutil.rmtree(scratch, ignore_errors=True)


def _server(
    repository: Path,
    ports: tuple[int, int, int],
    extra: list[str],
    triton_version: Release | None,
    server_python: str | None,
    tritonserver_path: str | None,
    embedded: bool,
    log_path: Path,
    log_verbose: int,
) -> tuple[TritonServer, str]:
    """The server to run and its version: --tritonserver, else one on PATH, else the embedded one."""
    embedded = embedded or bool(triton_version) or bool(server_python)
    if tritonserver_path and embedded:
        raise ServeError(
            "--tritonserver runs the binary you name (with its own Python); --triton-version/--server-python/"
            "--embedded select the embedded server. Pass one or the other."
        )
    options = dict(
        http_port=ports[0], grpc_port=ports[1], metrics_port=ports[2], log_verbose=log_verbose, log_path=log_path,
        extra_args=extra,
    )  # fmt: skip
    external = None if embedded else find_tritonserver(tritonserver_path)
    if external is not None:
        click.echo(f"Using {external}")
        return ExternalTritonServer(external, repository, **options), str(external)  # type: ignore[arg-type]
    install, venv = embedded_server(triton_version, _echo, server_python)
    return TritonServer(repository, install, venv, **options), install.release.tritonserver  # type: ignore[arg-type]


COMMANDS = [serve]
