"""A real OCI registry on 127.0.0.1 for the tests: Debian's ``docker-registry`` (CNCF distribution), one per use.

It stores blobs under a directory the test owns (``blob_file`` finds one, so a test can alter it as a broken
or malicious registry would), listens on a free port, and is stopped by its PID when the block ends, also on
failure. Docker pulls from a 127.0.0.0/8 registry over plain HTTP without configuration.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from repogen.server.running.host import free_ports
from repogen.testing.prerequisites import require_tool

__all__ = ["LocalRegistry", "local_registry"]


@dataclass(frozen=True)
class LocalRegistry:
    host: str
    """``127.0.0.1:PORT``, the registry part of a reference."""
    root: Path
    log: Path

    def blob_file(self, digest: str) -> Path:
        """Where distribution's filesystem driver keeps a blob's bytes."""
        hex_digest = digest.removeprefix("sha256:")
        return self.root / "docker/registry/v2/blobs/sha256" / hex_digest[:2] / hex_digest / "data"


def _wait(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"docker-registry exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError as exc:
            if exc.code == 401:  # up, asking for the login it was given
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"docker-registry did not answer {url} within {timeout:.0f} s:\n{log.read_text()[-2000:]}")


def _bcrypt(password: str) -> str:
    """The system's crypt(3) (libxcrypt's $2b$): distribution's htpasswd accepts bcrypt alone."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the crypt module goes in Python 3.13
        import crypt

    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


@contextlib.contextmanager
def local_registry(directory: Path, login: tuple[str, str] | None = None) -> Iterator[LocalRegistry]:
    """``docker-registry serve`` with its storage and log under ``directory``; stopped (by PID) afterwards.

    ``login``: (user, password) the registry demands over HTTP Basic (its htpasswd file, bcrypt as it requires).
    """
    command = require_tool("docker-registry", "docker-registry", "run a real OCI registry on 127.0.0.1")
    (port,) = free_ports(1)
    host = f"127.0.0.1:{port}"
    config = {
        "version": 0.1,
        "log": {"level": "info"},
        "storage": {"filesystem": {"rootdirectory": str(directory / "storage")}, "delete": {"enabled": True}},
        "http": {"addr": host},
    }
    if login is not None:
        (directory / "htpasswd").write_text(f"{login[0]}:{_bcrypt(login[1])}\n")
        config["auth"] = {"htpasswd": {"realm": "repogen-test", "path": str(directory / "htpasswd")}}
    (directory / "config.yml").write_text(yaml.safe_dump(config))
    log = directory / "registry.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([command, "serve", str(directory / "config.yml")], stdout=out, stderr=out)
    try:
        _wait(f"http://{host}/v2/", process, log)
        yield LocalRegistry(host, directory / "storage", log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
