"""The embedded server's first download shows its bytes and percent, then serves.

`repogen serve` runs with an empty cache (the numpy-only server venv linked in from the test cache,
so only the server is installed) and pip pointed at a package index on 127.0.0.1 that serves the
nvidia-pytriton wheel from the test cache: the real download path, with no traffic off this machine.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_cli import ServeProcess, cli_env

from repogen.server.provision.install import default_cache_dir
from repogen.server.running.process import free_ports
from repogen.testing.pytest_plugin import TritonInstallation

pytestmark = pytest.mark.integration


@pytest.fixture
def local_index(tmp_path: Path, triton_install: TritonInstallation) -> Iterator[str]:
    """A PEP 503 index on 127.0.0.1 holding the release's wheel (http.server sends its Content-Length)."""
    wheel = triton_install.install.release.wheel
    assert wheel is not None
    source = default_cache_dir() / "wheels" / wheel.filename
    project = tmp_path / "index" / "simple" / "nvidia-pytriton"
    project.mkdir(parents=True)
    os.symlink(source, project / wheel.filename)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    (project / "index.html").write_text(f'<a href="{wheel.filename}#sha256={digest}">{wheel.filename}</a>\n')
    (port,) = free_ports(1)
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path / "index")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}/simple/"
    finally:
        server.terminate()
        server.wait(30)


def test_first_use_downloads_with_bytes_and_percent(
    tmp_path: Path, local_index: str, triton_install: TritonInstallation, cli_build: object
) -> None:
    repo = tmp_path / "repo"
    cli_build("examples/quickstart/app.py:models", repo)  # type: ignore[operator]
    cache = tmp_path / "cache"
    cache.mkdir()
    os.symlink(triton_install.venv.path, cache / triton_install.venv.path.name)  # only the server is new
    env = cli_env(REPOGEN_CACHE_DIR=str(cache), PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=local_index,
                  PIP_NO_CACHE_DIR="1")  # fmt: skip
    for variable in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL"):
        env.pop(variable, None)
    serve = ServeProcess(repo, triton_install, env=env)
    try:
        serve.wait_for(r"ready \(pid \d+\)", timeout=300)
    finally:
        serve.stop()
    out = serve.output()
    wheel = triton_install.install.release.wheel
    assert wheel is not None
    assert f"First use of tritonserver {triton_install.install.release.tritonserver}" in out
    progress = re.findall(rf"downloading {re.escape(wheel.filename)}: ([\d.]+) of ([\d.]+) MB \((\d+)%\)", out)
    assert progress, out[-3000:]
    size_mb = f"{(cache / 'wheels' / wheel.filename).stat().st_size / 1e6:.1f}"
    assert progress[-1] == (size_mb, size_mb, "100")
    assert [int(p[2]) for p in progress] == sorted(int(p[2]) for p in progress)
    assert (cache / f"tritonserver-{triton_install.install.release.tritonserver}" / ".repogen-install.json").is_file()
