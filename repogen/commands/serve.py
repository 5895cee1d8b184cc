"""``repogen serve``: run a stock tritonserver on a repository (or an app it builds) in the foreground."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..server.running.host import HOST
from ..server.running.serving import ServeOptions, Serving
from ..triton.endpoints import DEFAULT_PORTS
from ..triton.releases import DEFAULT_RELEASE, EMBEDDED
from .params import release_option, restrict_option, trace_options

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
@release_option(
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
@trace_options
@restrict_option
@click.option("--access-token", "token", metavar="KEY", help="The key the restricted APIs want (default "
              "$REPOGEN_ACCESS_TOKEN, else a new random one), printed once when ready; repogen's client commands on "
              "this machine find it.")  # fmt: skip
def serve(target: str, tritonserver_args: tuple[str, ...], **options: Any) -> None:
    """Serve TARGET with a stock tritonserver on 127.0.0.1 until Ctrl+C (or SIGTERM).

    TARGET is a built repository, or an app (path/app.py:models, package.module:models) built first.
    Arguments after `--` go to tritonserver as they are: repogen serve DIR -- --log-info=false

    The embedded server (the unmodified tritonserver from PyPI's nvidia-pytriton wheel) is
    installed into the cache on first use ($REPOGEN_CACHE_DIR, default ~/.cache/repogen) and
    runs models from a venv holding numpy only, like an NGC container, of that container's Python.

    Shared memory, the model repository API, statistics, trace and logging settings answer only requests
    carrying the run's access key (--restrict, as PyTriton 0.7); health, metadata and inference stay open.
    """
    Serving(ServeOptions(target, tritonserver_args, **options), echo=click.echo, out=sys.stdout).run()


COMMANDS = [serve]
