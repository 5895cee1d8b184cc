"""``repogen serve --image IMAGE``: the same foreground server, run by a container image instead of the embedded one.

The user's own NGC image (or one built from ``repogen deploy --docker``) is what production runs;
serving in it during development catches what the embedded server cannot (its Python, its backends,
its user). The container runs with the flags the deployment files use: the repository mounted
read-only, ``--user 1000:1000`` (NGC's ``triton-server``, KServe's runtime), ``--shm-size`` computed
from the repository, and its HTTP, gRPC and metrics ports published on 127.0.0.1 only.

``docker run`` itself runs in the foreground as the server's process: its output is the log, SIGINT
to it is passed on to tritonserver (Docker's signal proxy), and it exits with the container, which
``--rm`` removes; :meth:`ContainerTritonServer.stop` removes it too should the client be killed.

With ``--reload`` the directory *above* the repository is mounted (read-only): a rebuild swaps the
repository directory for a new one, and a bind mount of the directory itself would keep showing the
old, deleted one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import DockerError, ServeError
from ...ondisk.reader import read_repository
from ...triton.endpoints import DEFAULT_PORTS
from ...triton.releases import version_tuple
from ...triton.restricted_apis import GRPC_FLAG, HTTP_FLAG, restricts_grpc, restricts_http
from ...triton.shm import shm_size_bytes
from .docker import Engine, engine, unique_name
from .host import HOST
from .server_process import ServerProcess

__all__ = ["ContainerTritonServer", "container_server"]

CONTAINER_USER = "1000:1000"
"""``triton-server`` in every NGC tritonserver image, and the uid KServe's runtime serves as."""
MOUNT = "/models"
PARENT_MOUNT = "/repogen"


class ContainerTritonServer(ServerProcess):
    """tritonserver in ``image``, started by ``docker run`` in the foreground (the process this class manages)."""

    def __init__(
        self,
        image: str,
        model_repository: str | Path,
        *,
        docker: Engine,
        mount_parent: bool = False,
        server_version: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.image, self.docker, self.mount_parent, self.server_version = image, docker, mount_parent, server_version
        self.name = unique_name("repogen-serve")
        super().__init__(model_repository, **kwargs)
        info = read_repository(self.model_repository)
        self.shm_size = shm_size_bytes(info.python_instances())  # the deployment files' figure
        self.gpus = ["--gpus", "all"] if info.uses_gpu else []  # the NVIDIA container toolkit's, for KIND_GPU models
        parent = self.model_repository.parent
        mode = parent.stat().st_mode & 0o777
        if mount_parent and mode & 0o005 != 0o005:
            raise ServeError(
                f"--reload --image mounts {parent} (the directory holding the repository, which every rebuild "
                f"replaces) for the container's uid 1000, which may not read it (mode {mode:o}); expected others to "
                f"read and enter it. chmod o+rx {parent}, or build into another -o directory."
            )

    @property
    def repository_in_container(self) -> str:
        return f"{PARENT_MOUNT}/{self.model_repository.name}" if self.mount_parent else MOUNT

    def command(self) -> list[str]:
        repository = self.model_repository
        mount = f"{repository.parent}:{PARENT_MOUNT}:ro" if self.mount_parent else f"{repository}:{MOUNT}:ro"
        ports = (self.http_port, self.grpc_port, self.metrics_port)
        return [
            self.docker.cli, "run", "--rm", "--name", self.name, "--user", CONTAINER_USER, *self.gpus,
            f"--shm-size={self.shm_size}", "-v", mount,
            *(f"-p{HOST}:{host}:{inside}" for host, inside in zip(ports, DEFAULT_PORTS.values(), strict=True)),
            self.image, "tritonserver", f"--model-repository={self.repository_in_container}",
            f"--log-verbose={self.log_verbose}", *self.restriction_args(), *self.extra_args,
        ]  # fmt: skip

    def restricts(self) -> dict[str, bool]:
        """The restriction flags the image's tritonserver has: from its ``TRITON_SERVER_VERSION`` (NGC's images and
        the stand-ins set it), else from its ``--help``."""
        if self.server_version:
            version = version_tuple(self.server_version)
            return {"http": restricts_http(version), "grpc": restricts_grpc(version)}
        done = self.docker("run", "--rm", "--entrypoint", "tritonserver", self.image, "--help", check=False, timeout=99)
        text = done.stdout + done.stderr
        return {"http": HTTP_FLAG in text, "grpc": GRPC_FLAG in text}

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def stop(
        self, timeout: float = 30.0, unloaded_grace: float | None = None, unload_first: bool = False
    ) -> int | None:
        """Stop as any server (SIGINT, passed on to tritonserver), then make sure the container is gone."""
        try:
            return super().stop(timeout, unloaded_grace, unload_first)
        finally:
            if self._proc is not None:
                self.docker("rm", "-f", "-v", self.name, check=False, timeout=120)

    def __repr__(self) -> str:
        return f"ContainerTritonServer({self.image}, {self.model_repository})"


def container_server(image: str, repository: Path, *, mount_parent: bool, **options: Any) -> tuple[ServerProcess, str]:
    """The server ``repogen serve --image`` runs, and how its banner names it (``2.51.0 in IMAGE``)."""
    try:
        docker = engine()
    except DockerError as exc:
        raise ServeError(f"--image {image}: {exc}") from exc
    found = docker.inspect("image", image)
    environment = dict(item.split("=", 1) for item in ((found or {}).get("Config") or {}).get("Env") or [])
    version = environment.get("TRITON_SERVER_VERSION")
    server = ContainerTritonServer(
        image, repository, docker=docker, mount_parent=mount_parent, server_version=version, **options
    )
    return server, f"{version} in {image}" if version else f"in {image}"
