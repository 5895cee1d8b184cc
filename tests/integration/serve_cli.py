"""`repogen serve` in a subprocess, as a user runs it, for the CLI integration tests (test_cli_*.py)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from repogen.server.provision.install import default_cache_dir
from repogen.server.running.process import free_ports
from repogen.testing.pytest_plugin import TritonInstallation

ROOT = Path(__file__).resolve().parents[2]


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("REPOGEN_CACHE_DIR", str(default_cache_dir()))  # the cache the tests' servers came from
    env.pop("REPOGEN_URL", None)
    env.pop("REPOGEN_PROTOCOL", None)
    env.update(extra)
    return env


def repogen(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """One `repogen` command in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "repogen", *args], cwd=ROOT, env=env or cli_env(), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip


class Output:
    """A started process's stdout and stderr, collected line by line by a thread so that it never blocks."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 180.0, after: int = 0) -> re.Match[str]:
        """The first line (from line ``after`` on) matching ``pattern``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines[after:]):
                match = re.search(pattern, line)
                if match:
                    return match
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r}; output:\n" + "\n".join(self.lines[-80:]))

    def wait_exit(self, timeout: float = 120.0) -> int:
        code = self.proc.wait(timeout)
        self._reader.join(10)
        return code

    def output(self) -> str:
        return "\n".join(self.lines)


class ServeProcess(Output):
    """`repogen serve TARGET ...` for the pairing under test."""

    def __init__(
        self,
        target: str | Path,
        install: TritonInstallation,
        *args: str,
        ports: tuple[int, int, int] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.http, self.grpc, self.metrics = ports or free_ports(3)
        self.release, self.python = install.install.release.tritonserver, install.venv.python_version
        options, passthrough = (list(args), []) if "--" not in args else _split(args)
        cmd = [
            sys.executable, "-m", "repogen", "serve", str(target), "--triton-release", self.release,
            "--server-python", self.python, "--http-port", str(self.http), "--grpc-port", str(self.grpc),
            "--metrics-port", str(self.metrics), *options, *passthrough,
        ]  # fmt: skip
        super().__init__(
            subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=env or cli_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                bufsize=1,
            )  # fmt: skip
        )

    def stop(self) -> int:
        """SIGINT, as Ctrl+C; kill if it does not stop within a minute."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.wait_exit(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


@contextlib.contextmanager
def serving(target: str | Path, install: TritonInstallation, ready: str) -> Iterator[ServeProcess]:
    """`repogen serve TARGET` until the block ends, once a line matches ``ready`` (a module fixture's body)."""
    serve = ServeProcess(target, install)
    try:
        serve.wait_for(ready)
        yield serve
    finally:
        serve.stop()


def _split(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    index = args.index("--")
    return list(args[:index]), list(args[index:])


def group_pids(pgid: int) -> list[int]:
    """Live processes in process group ``pgid`` (a server and its backend stubs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def time_wait_ports() -> set[int]:
    """Local ports with a socket in TIME-WAIT (state 06 in /proc/net/tcp)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "06":
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports
