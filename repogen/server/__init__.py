"""Install and run a stock tritonserver for tests, demos and ``repogen serve``."""

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
from repogen.triton.releases import DEFAULT_RELEASE, RELEASES, TritonRelease, get_release

__all__ = [
    "DEFAULT_RELEASE",
    "RELEASES",
    "ServerInstall",
    "ServerInstallError",
    "TritonRelease",
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
