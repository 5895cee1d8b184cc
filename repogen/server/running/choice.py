"""What ``repogen serve`` decides before a server starts: its ports, the tritonserver arguments it
leaves to the user, and which server runs (the one named, one on PATH, or the embedded one).

A mistake in these is named before anything starts; ``repogen.commands.serve`` only wires options.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path

from ...errors import ServeError, UsageError
from ...triton.access import GRPC_FLAG, HTTP_FLAG
from ...triton.endpoints import DEFAULT_PORTS
from ...triton.releases import Release
from ..client.access import Access
from .container import container_server
from .foreground import ExternalTritonServer, embedded_server, find_tritonserver
from .host import HOST
from .pairing import pairing_for
from .process import TritonServer, free_ports
from .server_process import ServerProcess

# tritonserver options `serve` sets itself → the serve option to use instead.
_MANAGED = {
    "--model-repository": "TARGET", "--model-store": "TARGET",
    "--http-port": "--http-port", "--grpc-port": "--grpc-port", "--metrics-port": "--metrics-port",
    "--http-address": f"nothing: serve binds {HOST}", "--grpc-address": f"nothing: serve binds {HOST}",
    "--metrics-address": f"nothing: serve binds {HOST}", "--backend-directory": "--tritonserver PATH",
    "--log-verbose": "--log-verbose",
    HTTP_FLAG: "--restrict APIS and --access-token KEY", GRPC_FLAG: "--restrict APIS and --access-token KEY",
}  # fmt: skip
_EXPLICIT = {"--model-control-mode": "--reload/--model", "--load-model": "--model NAME"}


def port_is_free(port: int) -> bool:
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


def choose_ports(http: int | None, grpc: int | None, metrics: int | None) -> tuple[int, int, int]:
    """Triton's usual ports by default; 0 picks a free one. A port given twice or in use is named before starting."""
    chosen = {
        what: given if given is not None else default
        for (what, default), given in zip(DEFAULT_PORTS.items(), (http, grpc, metrics), strict=True)
    }
    fixed = [(what, port) for what, port in chosen.items() if port]
    for index, (what, port) in enumerate(fixed):
        for other, other_port in fixed[index + 1 :]:
            if port == other_port:
                raise UsageError(
                    f"--{what}-port and --{other}-port are both {port}; each endpoint needs its own port "
                    "(0 picks a free one)."
                )
    spare = iter(p for p in free_ports(3) if p not in chosen.values())
    resolved = {what: port or next(spare) for what, port in chosen.items()}
    for what, port in resolved.items():
        if not port_is_free(port):
            raise ServeError(
                f"{what} port {port} on {HOST} is in use by a listening process; pass --{what}-port N "
                "(0: any free port) or stop what is using it."
            )
    return resolved["http"], resolved["grpc"], resolved["metrics"]


# tritonserver (2.45+) waits up to --exit-timeout-secs (default 30) for open HTTP connections before it unloads
# anything, so one client holding a keep-alive connection made Ctrl+C take 30 s. 3 s leaves the stubs time to
# unload when no client is connected (~1.1 s per instance of a model, measured); with a client the wait uses all
# of it and the server exits without the unload, which serve avoids only under explicit model control (it
# unloads every model first, see TritonServer.stop). The user's own value after `--` wins.
EXIT_TIMEOUT = "--exit-timeout-secs=3"


def stop_arguments(args: tuple[str, ...]) -> list[str]:
    """The exit timeout ``serve`` passes unless the tritonserver arguments after ``--`` set one."""
    return [] if any(arg.split("=", 1)[0] == "--exit-timeout-secs" for arg in args) else [EXIT_TIMEOUT]


def explicit_arguments(names: Sequence[str]) -> list[str]:
    """tritonserver's arguments for explicit model control, loading ``names`` at start."""
    return ["--model-control-mode=explicit", *(f"--load-model={name}" for name in names)]


def without_model_control(args: Sequence[str]) -> list[str]:
    """``args`` less their model control options, which serve is about to set itself."""
    return [arg for arg in args if arg.split("=", 1)[0] not in _EXPLICIT]


def check_passthrough(args: tuple[str, ...], explicit: bool) -> None:
    managed = dict(_MANAGED, **(_EXPLICIT if explicit else {}))
    for arg in args:
        option = arg.split("=", 1)[0]
        if option in managed:
            raise UsageError(
                f"tritonserver argument {arg!r} after `--`: repogen serve sets {option} itself; use {managed[option]} "
                "instead."
            )


def choose_server(
    repository: Path,
    ports: tuple[int, int, int],
    extra: list[str],
    triton_version: Release | None,
    server_python: str | None,
    tritonserver_path: str | None,
    embedded: bool,
    log_path: Path,
    log_verbose: int,
    echo: Callable[[str], None],
    access: Access | None = None,
    image: str | None = None,
    mount_parent: bool = False,
) -> tuple[ServerProcess, str]:
    """The server to run and its version: --image, --tritonserver, else one on PATH, else the embedded one.

    ``access``: the API groups it keeps behind a key (None: every API open). ``image``: serve in a container
    of it, the repository's parent mounted when ``mount_parent`` (``--reload``).
    """
    embedded = embedded or bool(triton_version) or bool(server_python)
    if tritonserver_path and embedded:
        raise UsageError(
            "--tritonserver runs the binary you name (with its own Python); --triton-version/--server-python/"
            "--embedded select the embedded server. Pass one or the other."
        )
    options = dict(
        http_port=ports[0], grpc_port=ports[1], metrics_port=ports[2], log_verbose=log_verbose, log_path=log_path,
        extra_args=extra, access=access,
    )  # fmt: skip
    if image:
        echo(f"Serving in a container of {image} (docker run --user 1000:1000, the repository mounted read-only).")
        return container_server(image, repository, mount_parent=mount_parent, **options)  # type: ignore[arg-type]
    external = None if embedded else find_tritonserver(tritonserver_path)
    if external is not None:
        echo(f"Using {external}")
        return ExternalTritonServer(external, repository, **options), str(external)  # type: ignore[arg-type]
    if triton_version is None and server_python is None and (pick := pairing_for(repository)) is not None:
        echo(f"{pick.why}, so the embedded server runs it on Python {pick.python} (tritonserver "
             f"{pick.release.tritonserver}).")  # fmt: skip
        triton_version, server_python = pick.release, pick.python
    install, venv = embedded_server(triton_version, echo, server_python)
    return TritonServer(repository, install, venv, **options), install.release.tritonserver  # type: ignore[arg-type]
