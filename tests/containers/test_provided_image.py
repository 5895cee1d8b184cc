"""A distribution the image provides (``--provided``) installs from where it comes from.

``tinylib==1.0+cpu`` plays ``torch==2.13.0+cpu``: a build with a local version label that no default
index has. The test makes its wheel, serves it from a PEP 503 index on 127.0.0.1, installs it where
the app builds (``--provided tinylib``: recorded, not shipped), and ``repogen deploy --docker
--index-url`` writes a Dockerfile whose ``pip install`` reads that index. ``docker build`` (host
network, so the build container reaches the index) makes the image on the 24.10 stand-in, which
serves the model over HTTP and gRPC and turns healthy. Without ``--index-url`` deploy refuses the
label, naming it (the unit tests cover PyTorch's labels, whose index this machine cannot reach).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
from runs import ACCESS_KEY, PREFIX

from repogen.server.running.docker import removing, unique_name
from repogen.server.running.process import free_ports
from repogen.testing.client import PROTOCOLS, infer

ROOT = Path(__file__).resolve().parents[2]
APP = "tests/apps/provided/app.py:models"
WHEEL = "tinylib-1.0+cpu-py3-none-any.whl"
ORIGIN = "tinylib 1.0+cpu, from the index on 127.0.0.1"
MODULE = f'ORIGIN = "{ORIGIN}"\n\n\ndef scale(x):\n    return x * 3\n'


def _wheel(path: Path) -> bytes:
    """A pure-Python wheel of ``tinylib`` 1.0+cpu, written here (nothing downloaded)."""
    info = "tinylib-1.0+cpu.dist-info"
    files = {
        "tinylib/__init__.py": MODULE.encode(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: tinylib\nVersion: 1.0+cpu\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: repogen-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for name, data in files.items()
    ]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path.read_bytes()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``http://127.0.0.1:<port>/simple``: a package index holding the wheel, for this module."""
    root = tmp_path_factory.mktemp("index")
    (root / "files").mkdir()
    digest = hashlib.sha256(_wheel(root / "files" / WHEEL)).hexdigest()
    (root / "simple" / "tinylib").mkdir(parents=True)
    link = f'<a href="/files/{quote(WHEEL)}#sha256={digest}">{WHEEL}</a>'
    (root / "simple" / "tinylib" / "index.html").write_text(f"<html><body>{link}</body></html>\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    (port,) = free_ports(1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/simple"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def context(index: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build context: the repository built with tinylib provided, and what `repogen deploy` wrote."""
    context = tmp_path_factory.mktemp("context")
    site = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site)]
    subprocess.run([*pip, "--index-url", index, "tinylib==1.0+cpu"], check=True, capture_output=True, text=True)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0"}
    repository = context / "model_repository"
    build = [sys.executable, "-m", "repogen", "build", APP, "-o", str(repository), "--provided", "tinylib"]
    done = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    deploy = [sys.executable, "-m", "repogen", "deploy", str(repository), "--docker", "-o", str(context / "deploy"),
              "--context", str(context), "--triton-release", "24.10"]  # fmt: skip
    refused = subprocess.run(deploy, cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "tinylib==1.0+cpu: a local version label" in refused.stderr, refused.stderr
    done = subprocess.run([*deploy, "--index-url", index], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return context


def test_the_dockerfile_installs_the_provided_build_from_the_index_given(context: Path, index: str) -> None:
    lines = (context / "deploy" / "Dockerfile").read_text().splitlines()
    assert f"RUN python3 -m pip install --no-cache-dir --index-url {index} tinylib==1.0+cpu" in lines
    assert not list((context / "model_repository" / "Triple" / "1").glob("packages"))  # provided: nothing shipped


@pytest.fixture(scope="module")
def served(context: Path, standin_image, docker_engine) -> Iterator[object]:
    image = standin_image("24.10")
    tag = f"{unique_name(f'{PREFIX}-provided')}:latest"
    classic = docker_engine.with_env(DOCKER_BUILDKIT="0")  # BuildKit would fetch the `# syntax=` frontend
    with removing(docker_engine, "image", tag):
        classic("build", "--network", "host", "-f", str(context / "deploy" / "Dockerfile"),
                "--build-arg", f"TRITON_IMAGE={image.tag}", "-t", tag, str(context), timeout=900)  # fmt: skip
        name = unique_name(f"{PREFIX}-provided")
        flags = ["--shm-size=64m", "-e", f"REPOGEN_ACCESS_TOKEN={ACCESS_KEY}"]  # the key the header's line gives it
        with docker_engine.run(tag, name=name, flags=flags) as container:
            container.wait_ready(180)
            yield container


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_image_serves_the_model_with_the_provided_distribution(served, protocol: str) -> None:
    x = np.array([[1.0, -2.5, 4.0]], dtype=np.float32)
    answer = infer(protocol, served, "Triple", {"x": x})
    np.testing.assert_array_equal(answer["y"], x * 3)
    assert answer["origin"].tolist() == [[ORIGIN.encode()]]


def test_the_image_turns_healthy(served) -> None:
    served.wait_health("healthy", 240)
