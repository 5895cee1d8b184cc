"""A stock tritonserver here, and a client of any running one, split by job.

:mod:`~repogen.server.provision` installs the server from PyPI's wheel, numpy-only venvs of the
containers' Pythons and perf_analyzer; :mod:`~repogen.server.running` runs it (the loopback process;
``repogen serve`` as a library, :class:`~repogen.server.running.serving.Serving`, with its choices, banner,
``--reload`` and foreground; stubs a dead server left);
:mod:`~repogen.server.client` sends it requests (``repogen infer``, ``repogen perf``, model states).
The names below are what the tests, benchmarks and demos use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repogen.server.provision.install import (
        ServerInstall,
        ServerInstallError,
        VenvInfo,
        default_cache_dir,
        ensure_server,
        ensure_server_venv,
        venv_info,
    )
    from repogen.server.running.process import TritonServer, TritonServerError, free_ports
    from repogen.triton.releases import DEFAULT_RELEASE, EMBEDDED, Release, get_release

# Loaded on first use, so that ``repogen infer`` (repogen.server.client) does not import the installer.
_HOMES = {
    **dict.fromkeys(
        ("ServerInstall", "ServerInstallError", "VenvInfo", "default_cache_dir", "ensure_server")
        + ("ensure_server_venv", "venv_info"),
        "repogen.server.provision.install",
    ),
    **dict.fromkeys(("TritonServer", "TritonServerError", "free_ports"), "repogen.server.running.process"),
    **dict.fromkeys(("DEFAULT_RELEASE", "EMBEDDED", "Release", "get_release"), "repogen.triton.releases"),
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'repogen.server' has no attribute {name!r}")


__all__ = [
    "DEFAULT_RELEASE",
    "EMBEDDED",
    "Release",
    "ServerInstall",
    "ServerInstallError",
    "TritonServer",
    "TritonServerError",
    "VenvInfo",
    "default_cache_dir",
    "ensure_server",
    "ensure_server_venv",
    "free_ports",
    "get_release",
    "venv_info",
]
