"""A Docker engine, driven through its own ``docker`` command: containers that serve a repository.

The CLI rather than an SDK: it is what the user has, it speaks every engine version (a 28.x client
negotiates down to Debian's 20.10 daemon), and what a test or ``repogen serve --image`` runs is the
command line a user would type. Containers publish their ports on 127.0.0.1 only, are named (a
caller's prefix plus a random suffix) and are removed with their anonymous volumes by
:meth:`Container.remove`, which a ``with`` block calls also when the body fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from repogen.errors import DockerError
from repogen.server.running.host import HOST, free_ports, http_client, is_ready
from repogen.triton.endpoints import DEFAULT_PORTS

__all__ = ["Container", "DockerError", "Engine", "engine", "removing", "unique_name"]

_ENGINE_FIX = (
    "Install Docker (Debian/Ubuntu: apt-get install docker.io) and start its daemon (`systemctl start docker`, "
    "or `dockerd &` as root), or point DOCKER_HOST at a running engine"
)
_TAIL = 40


def unique_name(prefix: str) -> str:
    """``<prefix>-<8 hex>``: a container or network name no other run picks."""
    return f"{prefix}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class Engine:
    """A reachable Docker engine: ``engine("ps", "-a")`` runs ``docker ps -a`` and returns its result."""

    cli: str
    server_version: str
    env: Mapping[str, str] = field(default_factory=dict)
    """Added to the CLI's environment (e.g. ``DOCKER_BUILDKIT=0`` for the classic builder)."""

    def __call__(
        self, *args: str, check: bool = True, timeout: float | None = 600, input: str | bytes | None = None
    ) -> subprocess.CompletedProcess[str]:
        text = not isinstance(input, bytes)
        proc = subprocess.run(
            [self.cli, *args], capture_output=True, text=text, input=input, timeout=timeout,
            env={**os.environ, **self.env},
        )  # fmt: skip
        stdout = proc.stdout if text else proc.stdout.decode(errors="replace")
        stderr = proc.stderr if text else proc.stderr.decode(errors="replace")
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        if check and proc.returncode != 0:
            shown = " ".join(args[:6]) + (" ..." if len(args) > 6 else "")
            output = "\n".join((stdout + stderr).strip().splitlines()[-_TAIL:])
            raise DockerError(f"`docker {shown}` failed (exit code {proc.returncode}):\n{output}")
        return done

    def with_env(self, **env: str) -> Engine:
        return Engine(self.cli, self.server_version, {**self.env, **env})

    def inspect(self, kind: str, ref: str) -> dict[str, Any] | None:
        """``docker <kind> inspect ref`` as a dict (``kind``: image, container, network); ``None`` if there is none."""
        done = self(kind, "inspect", ref, check=False, timeout=60)
        if done.returncode != 0:
            return None
        found: list[dict[str, Any]] = json.loads(done.stdout)
        return found[0] if found else None

    def run(
        self,
        image: str,
        args: Sequence[str] = (),
        *,
        name: str,
        flags: Sequence[str] = (),
        publish: Mapping[str, int] | None = None,
    ) -> Container:
        """``docker run -d``: a started container; ``publish`` maps endpoint names to container ports.

        Each published port gets a free host port on 127.0.0.1 (by default Triton's HTTP, gRPC and
        metrics ports). The container is not removed on exit, so its logs outlive a crash: use the
        returned container as a context manager, or call :meth:`Container.remove`.
        """
        ports = dict(DEFAULT_PORTS if publish is None else publish)
        host_ports = dict(zip(ports, free_ports(len(ports)), strict=True))
        published = [f"-p{HOST}:{host_ports[key]}:{port}" for key, port in ports.items()]
        done = self("run", "-d", "--name", name, *published, *flags, image, *args, check=False, timeout=300)
        container = Container(self, name, host_ports)
        if done.returncode != 0:
            container.remove()
            raise DockerError(f"`docker run {image}` failed (exit code {done.returncode}): {done.stderr.strip()}")
        return container


def engine(timeout: float = 60) -> Engine:
    """The engine the ``docker`` command reaches, checked with ``docker version``; :class:`DockerError` if none."""
    cli = shutil.which("docker")
    if cli is None:
        raise DockerError(f"no `docker` command on PATH. {_ENGINE_FIX}.")
    try:
        done = subprocess.run(
            [cli, "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise DockerError(f"`docker version` did not answer within {timeout:.0f} s. {_ENGINE_FIX}.") from None
    version = done.stdout.strip()
    if done.returncode != 0 or not version:
        reason = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        raise DockerError(f"no Docker engine answers the `docker` command ({reason}). {_ENGINE_FIX}.")
    return Engine(cli, version)


class Container:
    """A named container of :meth:`Engine.run`, its published ports on 127.0.0.1."""

    def __init__(self, engine: Engine, name: str, host_ports: Mapping[str, int]):
        self.engine, self.name, self.host_ports = engine, name, dict(host_ports)

    @property
    def http_url(self) -> str:
        """``127.0.0.1:<port>`` of the container's HTTP endpoint (tritonclient's ``url``)."""
        return f"{HOST}:{self.host_ports['http']}"

    @property
    def grpc_url(self) -> str:
        return f"{HOST}:{self.host_ports['grpc']}"

    def url(self, endpoint: str) -> str:
        return f"{HOST}:{self.host_ports[endpoint]}"

    def exec(
        self, *command: str, user: str | None = None, timeout: float = 120, check: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``docker exec``: ``command`` inside the running container."""
        flags = ["--user", user] if user else []
        return self.engine("exec", *flags, self.name, *command, check=check, timeout=timeout)

    def logs(self) -> str:
        done = self.engine("logs", self.name, check=False, timeout=60)
        return done.stdout + done.stderr

    def logs_tail(self, lines: int = _TAIL) -> str:
        return "\n".join(self.logs().splitlines()[-lines:])

    def inspect(self) -> dict[str, Any]:
        found = self.engine.inspect("container", self.name)
        if found is None:
            raise DockerError(f"container {self.name} is gone")
        return found

    def running(self) -> bool:
        found = self.engine.inspect("container", self.name)
        return bool(found and found["State"]["Running"])

    def health(self) -> str | None:
        """``starting``, ``healthy`` or ``unhealthy`` (the image's HEALTHCHECK); ``None`` without one."""
        health = self.inspect()["State"].get("Health")
        return None if health is None else str(health["Status"])

    def wait_ready(self, timeout: float = 180) -> Container:
        """Until ``/v2/health/ready`` answers 200; :class:`DockerError` with the log's tail if it exits or times out."""
        deadline = time.monotonic() + timeout
        with http_client(self.http_url, timeout=5) as client:
            while time.monotonic() < deadline:
                if is_ready(client):
                    return self
                if not self.running():
                    state = self.inspect()["State"]
                    raise DockerError(
                        f"container {self.name} exited (status {state['ExitCode']}) before it was ready:\n"
                        + self.logs_tail()
                    )
                time.sleep(0.5)
        raise DockerError(f"container {self.name} was not ready within {timeout:.0f} s:\n{self.logs_tail()}")

    def wait_health(self, status: str, timeout: float) -> float:
        """Seconds until the HEALTHCHECK reports ``status``; :class:`DockerError` naming the last one otherwise."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            current = self.health()
            if current == status:
                return time.monotonic() - start
            if not self.running():
                raise DockerError(f"container {self.name} exited while waiting for {status}:\n{self.logs_tail()}")
            time.sleep(0.5)
        raise DockerError(
            f"container {self.name} was still {self.health()} after {timeout:.0f} s, expected {status}:\n"
            + self.logs_tail()
        )

    def remove(self) -> None:
        """``docker rm -f -v``: the container and its anonymous volumes; nothing if it is gone already."""
        self.engine("rm", "-f", "-v", self.name, check=False, timeout=120)

    def __enter__(self) -> Container:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Container({self.name!r}, {self.host_ports})"


@contextlib.contextmanager
def removing(engine: Engine, kind: str, *refs: str) -> Iterator[None]:
    """Remove the images, volumes or networks (``kind``) named ``refs`` when the block ends, also on failure."""
    try:
        yield
    finally:
        force = [] if kind == "network" else ["-f"]  # `network rm -f` is newer than Debian's 20.10 client
        for ref in refs:
            engine(kind, "rm", *force, ref, check=False, timeout=300)
