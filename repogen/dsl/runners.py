"""Who runs what the DSL declares: a repository in this process (``models.local()``), a ``Triton`` on a server.

The DSL imports no runner (build, server and the in-process runtime sit above it); ``repogen`` registers both
when it is imported, so this module is small and imports nothing: registering them loads no declaration either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LocalRunner = Callable[[Any], Any]
"""Runs a :class:`~repogen.dsl.repository.Repository` in this process; returns what ``models.local()`` returns."""
ServerRunner = Callable[[Any], Any]
"""Builds and serves a :class:`~repogen.dsl.pytriton.Triton`; returns the server it started (``stop()``,
``is_alive()``)."""

_local_runner: LocalRunner | None = None
_server_runner: ServerRunner | None = None


def set_local_runner(runner: LocalRunner) -> None:
    """Who runs a repository in this process; ``repogen`` sets it."""
    global _local_runner
    _local_runner = runner


def set_server_runner(runner: ServerRunner) -> None:
    """Who builds and serves a :class:`~repogen.dsl.pytriton.Triton`; ``repogen`` sets it."""
    global _server_runner
    _server_runner = runner


def local_runner() -> LocalRunner:
    if _local_runner is None:
        raise RuntimeError("no in-process runner is set; import repogen (its __init__ sets it)")
    return _local_runner


def server_runner() -> ServerRunner:
    if _server_runner is None:
        raise RuntimeError("no server runner is set; import repogen (its __init__ sets it)")
    return _server_runner
