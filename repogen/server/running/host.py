"""The host a local tritonserver runs on: its loopback ports, its processes, and the HTTP client that asks it."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["HOST", "free_ports", "group_pids", "http_client", "is_ready", "pid_alive"]

HOST = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """Ask the kernel for ``count`` distinct free loopback ports (held together so they differ)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in socks:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in socks]


@contextlib.contextmanager
def http_client(url: str, timeout: float = 5.0) -> Iterator[Any]:
    """A ``tritonclient.http.InferenceServerClient`` for ``host:port``, closed on exit."""
    import tritonclient.http

    client = tritonclient.http.InferenceServerClient(url, connection_timeout=timeout, network_timeout=timeout)
    try:
        yield client
    finally:
        client.close()


def is_ready(client: Any) -> bool:
    """Whether the server answers its readiness endpoint with 200; False while it cannot be reached."""
    try:
        return bool(client.is_server_ready())
    except Exception:  # refused, reset or timed out while the server starts: not ready yet
        return False


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_pids(pgid: int) -> list[int]:
    """Live processes in process group ``pgid`` (the server and its backend stubs)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return sorted(pids)
