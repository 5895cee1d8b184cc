"""The access key: how a server repogen starts gets one, and how repogen's own clients find it.

A server restricts some API groups (:mod:`repogen.triton.restricted_apis`) to requests carrying a key. The key
comes from, in this order: ``--access-token``, ``$REPOGEN_ACCESS_TOKEN``, or the file a running
``repogen serve`` of this user keeps for its ports (mode 0600 in a directory of this user's alone,
:func:`runs_dir`; removed when it stops), so ``repogen infer``/``status``/``load``/``perf`` against it
need nothing. Clients send it with every call (:class:`KeyedClient`), in the header each protocol expects.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...triton.restricted_apis import DEFAULT_RESTRICTED, GRPC_REFUSAL, HTTP_REFUSAL, header_for, restriction_args

__all__ = [
    "ENV",
    "Access",
    "KeyedClient",
    "find_token",
    "forget_run",
    "headers",
    "new_token",
    "record_run",
    "refusal_error",
    "refused",
    "runs_dir",
    "runs_root",
]

ENV = "REPOGEN_ACCESS_TOKEN"
"""The environment variable that holds the key: for repogen's clients, and in a deployed container."""
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def new_token() -> str:
    """A random key (256 bits, URL-safe), as PyTriton 0.7 makes one."""
    import secrets  # only where a key is made: `repogen infer` sends one and never makes one (~5 ms, with hmac)

    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Access:
    """What a server restricts and the key that opens it; ``apis`` empty: nothing is restricted."""

    token: str
    apis: tuple[str, ...] = DEFAULT_RESTRICTED

    @classmethod
    def choose(cls, apis: Sequence[str], token: str | None = None) -> Access | None:
        """The server's access: ``token`` if given, else ``$REPOGEN_ACCESS_TOKEN``, else a new one; None: open."""
        if not apis:
            return None
        return cls(token or os.environ.get(ENV) or new_token(), tuple(apis))

    def server_args(self, *, http: bool, grpc: bool) -> list[str]:
        return restriction_args(self.apis, self.token, http=http, grpc=grpc)

    def headers(self, protocol: str) -> dict[str, str]:
        return headers(self.token, protocol)


def headers(token: str | None, protocol: str) -> dict[str, str]:
    """The header a client of ``protocol`` sends ``token`` in; none without a token."""
    return {header_for(protocol): token} if token else {}


class KeyedClient:
    """A tritonclient client (HTTP or gRPC) that sends the key with every call taking ``headers``.

    tritonclient has no per-client headers: each method takes its own ``headers=``. Methods that take
    none (``close``, ``stop_stream``, ``async_stream_infer``: a stream carries the headers it was started
    with) pass through unchanged; headers given to a call are added to the key's.
    """

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if not self.headers or name.startswith("_") or not callable(attr) or not _takes_headers(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs["headers"] = {**self.headers, **(kwargs.get("headers") or {})}
            return attr(*args, **kwargs)

        return call


def _takes_headers(method: Callable[..., Any]) -> bool:
    import inspect  # here: 10 ms of a command's start, needed only where a key is sent

    try:
        return "headers" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def refused(message: str) -> bool:
    """Whether tritonserver's answer is its refusal of a request without the key (HTTP 403, gRPC UNAVAILABLE)."""
    return HTTP_REFUSAL in message or GRPC_REFUSAL in message


# --------------------------------------------------------------------------- a serve run's file


def runs_root() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "repogen" if base else Path(tempfile.gettempdir()) / f"repogen-{os.getuid()}"


def runs_dir(create: bool = False) -> Path | None:
    """Where ``repogen serve`` runs leave their keys: ``$XDG_RUNTIME_DIR/repogen``, else ``<tmp>/repogen-<uid>``.

    Per user, not per cache, so a client in another shell finds them. None when that directory is not this
    user's alone (a symlink, another owner, group or world access): then no key is written or read there.
    """
    root = runs_root()
    if create:
        with contextlib.suppress(OSError):
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        found = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return root


def record_run(access: Access, ports: Sequence[int], pid: int) -> Path | None:
    """Write the key of the server ``pid`` listening on ``ports`` (loopback) where clients look, owner-only;
    None when there is no such place (:func:`runs_dir`). One file per server: a process may serve several."""
    directory = runs_dir(create=True)
    if directory is None:
        return None
    path = directory / f"serve-{os.getpid()}-{pid}.json"
    data = json.dumps({"pid": pid, "ports": sorted(ports), "token": access.token, "apis": list(access.apis)})
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(data)
    return path


def forget_run(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _from_runs(url: str) -> str | None:
    """The key a live ``repogen serve`` of this user recorded for the loopback port ``url`` names."""
    host, _, port = url.rpartition(":")
    if host not in _LOOPBACK or not port.isdigit():
        return None
    directory = runs_dir()
    if directory is None:
        return None
    for path in sorted(directory.glob("serve-*.json")):
        try:
            run = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if int(port) in run.get("ports", ()) and _alive(int(run.get("pid", 0))):
            return str(run["token"])
    return None


def find_token(explicit: str | None, url: str) -> tuple[str | None, str]:
    """The key for the server at ``url`` (``host:port``) and where it came from: the flag, the environment, a
    ``repogen serve`` run on this machine, or nowhere (``None``)."""
    if explicit:
        return explicit, "--access-token"
    if os.environ.get(ENV):
        return os.environ[ENV], f"${ENV}"
    token = _from_runs(url)
    return (token, "the repogen serve run on this port") if token else (None, "")


def refusal_error(url: str, source: str, answer: str) -> str:
    """Why the server at ``url`` refused a request (its ``answer``) and what to do (``source``: where our key came
    from, empty when there was none)."""
    if source:
        return (
            f"the server at {url} refused the key from {source} ({answer}): it expects another one. Pass the "
            f"server's key with --access-token KEY (or ${ENV})."
        )
    return (
        f"the server at {url} keeps this API behind an access key and none was sent ({answer}). Pass --access-token "
        f"KEY or set ${ENV} to the key its deployment was given (`repogen serve` prints its own, and repogen's "
        "commands on this machine find it)."
    )
