"""What ``repogen serve`` decides before a server starts: its ports, and which server runs (a container of
the image named, the binary named, one on PATH, or the embedded one).

A port given twice or in use is named before anything starts.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import ServeError, UsageError
from ...triton.endpoints import DEFAULT_PORTS
from .container import container_server
from .external import ExternalTritonServer, find_tritonserver
from .host import HOST, free_ports
from .pairing import pairing_for
from .process import TritonServer, embedded_server
from .serve_options import ServeOptions
from .server_process import ServerProcess

__all__ = ["choose_ports", "choose_server", "port_is_free"]


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


def choose_server(
    options: ServeOptions,
    repository: Path,
    ports: tuple[int, int, int],
    settings: dict[str, Any],
    echo: Callable[[str], None],
) -> tuple[ServerProcess, str]:
    """The server to run and its version: --image, --tritonserver, else one on PATH, else the embedded one.

    ``settings``: the server's other :class:`ServerProcess` options (log, arguments, access). With ``--image``
    and ``--reload``, the container mounts the repository's parent, where a rebuild swaps the repository.
    """
    embedded = options.embedded or bool(options.triton_release) or bool(options.server_python)
    if options.tritonserver_path and embedded:
        raise UsageError(
            "--tritonserver runs the binary you name (with its own Python); --triton-release/--server-python/"
            "--embedded select the embedded server. Pass one or the other."
        )
    settings = dict(settings, http_port=ports[0], grpc_port=ports[1], metrics_port=ports[2])
    if options.image:
        echo(f"Serving in a container of {options.image} (docker run --user 1000:1000, the repository mounted "
             "read-only).")  # fmt: skip
        return container_server(options.image, repository, mount_parent=options.reload, **settings)
    external = None if embedded else find_tritonserver(options.tritonserver_path)
    if external is not None:
        echo(f"Using {external}")
        return ExternalTritonServer(external, repository, **settings), str(external)
    release, python = options.triton_release, options.server_python
    if release is None and python is None and (pick := pairing_for(repository)) is not None:
        echo(f"{pick.why}, so the embedded server runs it on Python {pick.python} (tritonserver "
             f"{pick.release.tritonserver}).")  # fmt: skip
        release, python = pick.release, pick.python
    install, venv = embedded_server(release, echo, python)
    return TritonServer(repository, install, venv, **settings), install.release.tritonserver
