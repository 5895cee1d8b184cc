"""Build-time and start-up benchmarks: `repogen build` of N models, tritonserver READY for 20.

Build time is measured two ways, each in a fresh process so nothing is cached between runs:
``library`` times ``repogen.build_app`` inside the process (import of repogen excluded);
``cli`` times the whole ``repogen build`` command (interpreter start and imports included),
which is what a user or a CI job waits for.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
MANY = f"{BENCH / 'apps' / 'many.py'}:models"

_LIBRARY_TIMER = """
import sys, time
from repogen import build_app
t = time.perf_counter()
build_app(sys.argv[1], sys.argv[2], force=True)
print(time.perf_counter() - t)
"""


def _env(models: int) -> dict[str, str]:
    return {**os.environ, "BENCH_MODELS": str(models)}


def build_library_s(models: int, output: Path) -> float:
    """Seconds ``build_app`` takes for ``models`` models, in a fresh interpreter."""
    shutil.rmtree(output, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-c", _LIBRARY_TIMER, MANY, str(output)], env=_env(models), check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def build_cli_s(models: int, output: Path) -> float:
    """Wall-clock seconds of ``repogen build`` (a fresh process, imports included)."""
    shutil.rmtree(output, ignore_errors=True)
    cli = Path(sys.executable).with_name("repogen")
    began = time.perf_counter()
    subprocess.run([str(cli), "build", MANY, "-o", str(output)], env=_env(models), check=True, capture_output=True)
    return time.perf_counter() - began


def startup_s(models: int, work: Path) -> float:
    """Seconds from launching tritonserver to ``/v2/health/ready`` for ``models`` generated models."""
    from servers import repogen_server, wait_http_ok

    repo = work / f"many-{models}"
    if not repo.exists():
        subprocess.run(
            [str(Path(sys.executable).with_name("repogen")), "build", MANY, "-o", str(repo)],
            env=_env(models), check=True, capture_output=True,
        )  # fmt: skip
    server = repogen_server(repo, work / f"startup-{models}.log")
    began = time.monotonic()
    server.start()
    try:
        wait_http_ok(f"http://{server.http_url}/v2/health/ready", timeout=300.0, poll=0.02)
        return time.monotonic() - began
    finally:
        server.stop()
