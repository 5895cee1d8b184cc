"""``repogen serve``: run a stock tritonserver on a repository (or an app it builds) in the foreground."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from ..errors import RepogenError
from ..ondisk.repository import model_dirs
from ..server.client.access import Access
from ..server.running.backends import serve_without, unservable
from ..server.running.choice import (
    check_passthrough,
    choose_ports,
    choose_server,
    explicit_arguments,
    stop_arguments,
)
from ..server.running.foreground import run_server
from ..server.running.host import HOST
from ..server.running.reload import Reloader, check_models
from ..server.running.target import clear_scratch, is_app, repository_for
from ..triton.endpoints import DEFAULT_PORTS
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED, Release
from .params import TritonRelease, restrict_option


def _echo(line: str) -> None:
    click.echo(line)


_EMBEDDED = ", ".join(r.tritonserver for r in EMBEDDED)


@click.command()
@click.argument("target")
@click.argument("tritonserver_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- TRITONSERVER_ARGS]...")
@click.option("--reload", is_flag=True, help="TARGET an app: on a change under its directory, rebuild it and reload "
              "the models whose files changed, in place, without restarting the server.")  # fmt: skip
@click.option("--model", "models", multiple=True, metavar="NAME", help="Load only this model (repeatable; explicit "
              "model control). Default: every model.")  # fmt: skip
@click.option("--model-control-mode", "control", type=click.Choice(["none", "explicit"]), help="explicit: load every "
              "model (or --model's) and let `repogen load`/`unload` change them while serving, as tritonserver's "
              "flag; --model and --reload imply it. Default none.")  # fmt: skip
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
@click.option(
    "--image",
    metavar="IMAGE",
    help="Serve in a container of IMAGE (e.g. nvcr.io/nvidia/tritonserver:24.10-py3, or one `repogen deploy "
    "--docker` built) on the local Docker engine, as the deployment files run it: the repository mounted "
    "read-only, user 1000:1000, /dev/shm sized for it, ports on 127.0.0.1.",
)
@click.option("--ready-timeout", type=float, default=300.0, show_default=True, help="Seconds to wait for the models.")
@click.option("--log-verbose", type=int, default=0, show_default=True, help="tritonserver --log-verbose level.")
@click.option(
    "--verify-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TARGET a signed repository: check its signatures against this public key before the server starts, and "
    "refuse to serve, naming each changed, missing and added file, unless it verifies (`repogen verify`).",
)
@restrict_option
@click.option("--access-token", "token", metavar="KEY", help="The key the restricted APIs want (default "
              "$REPOGEN_ACCESS_TOKEN, else a new random one), printed once when ready; repogen's client commands on "
              "this machine find it.")  # fmt: skip
def serve(
    target: str,
    tritonserver_args: tuple[str, ...],
    reload: bool,
    models: tuple[str, ...],
    control: str | None,
    output: Path | None,
    app_dir: Path | None,
    triton_version: Release | None,
    server_python: str | None,
    http_port: int | None,
    grpc_port: int | None,
    metrics_port: int | None,
    tritonserver_path: str | None,
    embedded: bool,
    image: str | None,
    ready_timeout: float,
    log_verbose: int,
    verify_key: Path | None,
    restrict: tuple[str, ...],
    token: str | None,
) -> None:
    """Serve TARGET with a stock tritonserver on 127.0.0.1 until Ctrl+C (or SIGTERM).

    TARGET is a built repository, or an app (path/app.py:models, package.module:models) built first.
    Arguments after `--` go to tritonserver as they are: repogen serve DIR -- --log-info=false

    The embedded server (the unmodified tritonserver from PyPI's nvidia-pytriton wheel) is
    installed into the cache on first use ($REPOGEN_CACHE_DIR, default ~/.cache/repogen) and
    runs models from a venv holding numpy only, like an NGC container, of that container's Python.

    Shared memory, the model repository API, statistics, trace and logging settings answer only requests
    carrying the run's access key (--restrict, as PyTriton 0.7); health, metadata and inference stay open.
    """
    app = target if is_app(target) else None
    if app is None and (reload or output or app_dir):
        raise click.UsageError(
            f"--reload, --output and --app-dir rebuild from an app; {target!r} is a directory. Pass the app instead: "
            "repogen serve path/app.py:models --reload"
        )
    if app is not None and verify_key is not None:
        raise click.UsageError(
            f"--verify-key checks a built, signed repository; {target!r} is an app. Build and sign it first (repogen "
            "build APP -o DIR --sign-key KEY.pem), then: repogen serve DIR --verify-key PUB.pem"
        )
    if control == "none" and (reload or models):
        raise click.UsageError("--reload and --model load models explicitly; drop --model-control-mode none.")
    explicit = reload or bool(models) or control == "explicit"
    if image and (embedded or tritonserver_path or triton_version or server_python):
        raise click.UsageError(
            "--image serves in that container image, with its own tritonserver and Python; --tritonserver, "
            "--triton-version, --server-python and --embedded pick a server on this machine. Pass one or the other."
        )
    check_passthrough(tritonserver_args, explicit)
    ports = choose_ports(http_port, grpc_port, metrics_port)
    scratch = Path(tempfile.mkdtemp(prefix="repogen-serve-"))
    if image:  # --reload mounts it into the container, whose uid 1000 must enter it (mkdtemp made it 0700)
        scratch.chmod(0o755)
    log_path = scratch / "tritonserver.log"
    reloader: Reloader | None = None
    keep: Path | None = None
    try:
        repository, build = repository_for(target, output or scratch / "model_repository", app_dir, _echo)
        if build is None and verify_key is not None:  # before the server (or its install) reads a byte of it
            from ..signing import VerifyWith, verify_repository

            verified = verify_repository(repository, VerifyWith(key=verify_key))
            verified.raise_if_failed()
            click.echo(verified.line())
        loaded = check_models(repository, models) if models else None
        extra = ["--exit-on-error=false"]
        if explicit:
            names = loaded or [m.name for m in model_dirs(repository) if m.has_config]
            extra += explicit_arguments(names)
        extra += [*stop_arguments(tritonserver_args), *tritonserver_args]
        server, version = choose_server(
            repository, ports, extra, triton_version, server_python, tritonserver_path, embedded, log_path, log_verbose,
            _echo, Access.choose(restrict, token), image=image, mount_parent=reload,
        )  # fmt: skip
        skipped = unservable(server, repository, loaded)
        if skipped:  # native-backend models the embedded server cannot load: named, and the rest served
            loaded = serve_without(server, repository, skipped, loaded, version, _echo)
            explicit = True
        if reload and build is not None:
            reloader = Reloader(build, server, loaded)
        run_server(
            server,
            version,
            _echo,
            ready_timeout=ready_timeout,
            loaded=loaded,
            keep_failed=reload,
            tick=reloader.tick if reloader else None,
            explicit=explicit,
        )
    except RepogenError:
        keep = log_path  # serving failed: the error names the log, so keep it (and nothing else)
        raise
    finally:
        if reloader is not None:
            reloader.close()
        clear_scratch(scratch, keep)  # however serve ends: an error, Ctrl+C during the build


COMMANDS = [serve]
