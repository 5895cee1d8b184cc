"""A Compose file (``compose.yaml``) running one tritonserver on one machine: ``docker compose up -d``.

The service runs what the Dockerfile's image runs (``tritonserver --model-repository=/models`` as uid
1000, the same HEALTHCHECK by real inference, the computed ``shm_size``) and restarts unless stopped,
which also restarts it after ``PyTritonUnrecoverableError`` ends the server with status 0. By default
the stock image of the release serves the repository from a read-only bind mount; with ``--prebuilt``
the service builds and runs the image of the Dockerfile `repogen deploy --docker` writes beside it.
Ports are published on 127.0.0.1 unless ``TRITON_ADDRESS`` says otherwise; ``TRITON_IMAGE`` and the
``TRITON_*_PORT`` variables change the image and the host ports without editing the file. The command
is the Dockerfile's ``CMD``: with restricted APIs (deploy/access_secret.py) the key comes from
``$REPOGEN_ACCESS_TOKEN`` in the shell that runs compose, passed to the container, never written in the
file, and the server does not start without it. Compose reads ``$`` as interpolation, so every ``$``
of the command and the probe is written ``$$``. Checked by Debian's ``docker-compose`` 1.29 (the
Compose specification, no ``version:`` key) in tests/containers/test_compose.py.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..ondisk.reader import BuiltRepository
from ..triton.endpoints import DEFAULT_PORTS, HTTP_PORT
from ..triton.releases import Release
from ..triton.shm import shm_size_bytes
from . import access_secret, probe
from .kubernetes import MODEL_REPOSITORY, TRITON_UID, server_args

__all__ = ["compose_file"]


def _escaped(value: str) -> str:
    return value.replace("$", "$$")


def _relative(path: Path, start: Path) -> str:
    relative = os.path.relpath(path.resolve(), start.resolve())
    return relative if relative.startswith(".") else f"./{relative}"


def _healthcheck(info: BuiltRepository, apis: tuple[str, ...]) -> dict[str, Any]:
    """The Dockerfile's HEALTHCHECK: every model answers one small request (repogen/deploy/probe.py)."""
    found = probe.probes(info)
    check = probe.command(found, HTTP_PORT, access_secret.probe_key_args(apis, "inference"))
    return {
        "test": ["CMD", *(_escaped(part) for part in check)],
        "interval": f"{probe.PERIOD_S}s",
        "timeout": f"{probe.timeout_s(found)}s",
        "retries": probe.FAILURES,
        "start_period": "600s",
    }


def compose_file(
    info: BuiltRepository,
    target: Release,
    name: str,
    *,
    directory: Path,
    image: str | None,
    build: dict[str, str] | None,
    apis: tuple[str, ...] = (),
    gpus: int | None = None,
    server: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The Compose document for ``info`` on ``target``, written into ``directory`` (relative paths start there).

    ``build`` (``context`` and ``dockerfile``, absolute) builds ``image`` from the generated Dockerfile
    with the repository inside; without it the stock image serves ``info.path`` mounted read-only. ``apis``:
    the API groups kept behind the key. A repository with GPU models reserves ``gpus`` NVIDIA GPUs (all
    without), as Compose asks for them (the NVIDIA container toolkit's ``nvidia`` driver).
    """
    stock = f"${{TRITON_IMAGE:-{target.image}}}"
    service: dict[str, Any] = {"image": image if build else stock}
    if build:
        context = Path(build["context"])
        service["build"] = {
            "context": _relative(context, directory),
            "dockerfile": os.path.relpath(Path(build["dockerfile"]).resolve(), context.resolve()),
            "args": {"TRITON_IMAGE": stock},
        }
    extra = info.server_args() if server is None else server  # the options the models depend on, then tracing
    command = access_secret.docker_cmd(target, apis, server_args(MODEL_REPOSITORY, *extra))
    service["command"] = [_escaped(part) for part in command]
    if apis:
        service["environment"] = [access_secret.ENV]  # its value from the shell that runs compose
    service["user"] = f"{TRITON_UID}:{TRITON_UID}"
    service["shm_size"] = f"{shm_size_bytes(info.python_instances()) >> 20}m"
    service["ports"] = [
        f"${{TRITON_ADDRESS:-127.0.0.1}}:${{TRITON_{endpoint.upper()}_PORT:-{port}}}:{port}"
        for endpoint, port in DEFAULT_PORTS.items()
    ]
    if not build:
        service["volumes"] = [f"{_relative(info.path, directory)}:{MODEL_REPOSITORY}:ro"]
    service["healthcheck"] = _healthcheck(info, apis)
    service["restart"] = "unless-stopped"
    if info.uses_gpu:
        device = {"driver": "nvidia", "count": gpus or "all", "capabilities": ["gpu"]}
        service["deploy"] = {"resources": {"reservations": {"devices": [device]}}}
    return {"services": {name: service}}
