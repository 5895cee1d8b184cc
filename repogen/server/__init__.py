"""A stock tritonserver here, and a client of any running one.

Install the server and a numpy-only venv (:mod:`~repogen.server.install`, downloads in
:mod:`~repogen.server.download`), run it (:mod:`~repogen.server.process`; ``repogen serve`` in the
foreground: :mod:`~repogen.server.foreground`, its banner :mod:`~repogen.server.banner`, ``--reload``
:mod:`~repogen.server.reload`, failure lines :mod:`~repogen.server.states`), send it a request
(``repogen infer``: :mod:`~repogen.server.infer`, values typed by :mod:`~repogen.server.values`) and
measure it (``repogen perf``: :mod:`~repogen.server.perf` over :mod:`~repogen.server.perf_analyzer`).
Used by the tests and demos too.
"""

from repogen.server.install import (
    ServerInstall,
    ServerInstallError,
    VenvInfo,
    default_cache_dir,
    ensure_server,
    ensure_server_venv,
    venv_info,
)
from repogen.server.process import TritonServer, TritonServerError, free_ports
from repogen.triton.releases import DEFAULT_RELEASE, EMBEDDED, Release, get_release

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
