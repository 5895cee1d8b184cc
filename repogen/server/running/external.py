"""A tritonserver the user installed: ``--tritonserver PATH``, or ``tritonserver`` on PATH.

It has backends and a Python backend stub of its own, so it runs with the caller's environment as it
is (the managed numpy-only venv pairs with the embedded server's stubs only), and its release is
unknown: what it can restrict is read from its ``--help``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ...errors import ServeError
from ...triton.restricted_apis import GRPC_FLAG, HTTP_FLAG
from .server_process import ServerProcess

__all__ = ["ExternalTritonServer", "find_tritonserver", "help_restricts"]


class ExternalTritonServer(ServerProcess):
    """A tritonserver the user installed (``--tritonserver``, or found on PATH)."""

    def __init__(self, binary: Path, model_repository: str | Path, **kwargs: Any) -> None:
        self.binary = binary
        self._restricts: dict[str, bool] | None = None
        super().__init__(model_repository, **kwargs)

    def command(self) -> list[str]:
        return [
            str(self.binary),
            f"--model-repository={self.model_repository}",
            *self.loopback_args(),
            *self.restriction_args(),
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def restricts(self) -> dict[str, bool]:
        """Its release is unknown: what its ``--help`` lists (2.39 has no HTTP flag), read once."""
        if self._restricts is None:
            self._restricts = help_restricts(self.binary, self.environment())
        return self._restricts

    def __repr__(self) -> str:
        return f"ExternalTritonServer({self.binary}, {self.model_repository})"


def help_restricts(binary: Path, env: dict[str, str]) -> dict[str, bool]:
    """Which restriction flags a tritonserver binary lists in its ``--help`` (none if it does not answer)."""
    try:  # tritonserver prints its usage on stderr and exits 1
        done = subprocess.run([str(binary), "--help"], env=env, capture_output=True, text=True, timeout=30, check=False)
        text = done.stdout + done.stderr
    except (OSError, subprocess.SubprocessError):
        text = ""
    return {"http": HTTP_FLAG in text, "grpc": GRPC_FLAG in text}


def find_tritonserver(explicit: str | None) -> Path | None:
    """``--tritonserver PATH`` (must exist and be executable), else ``tritonserver`` on PATH, else ``None``."""
    if explicit:
        path = Path(explicit).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ServeError(
                f"--tritonserver {explicit}: no executable file there; expected the path of a tritonserver "
                "binary (e.g. /opt/tritonserver/bin/tritonserver). Omit it to use the embedded server."
            )
        return path.resolve()
    found = shutil.which("tritonserver")
    return Path(found).resolve() if found else None
