"""The Dockerfile `repogen deploy --docker` writes builds: its stages are played here without Docker.

There is no Docker engine on the machines this runs on, so the generated Dockerfile is parsed and
played as Docker would: COPY takes only what is in the build context (in order: a file the Dockerfile
names before copying it fails here as it would in `docker build`), RUN runs in a clean venv of the
image's Python (3.10 for 24.10, numpy 1.26.4 as the image has it, nothing else), with the image's
absolute paths mapped under a scratch root. The repository the build stage produces is then served by
the embedded server and answers over HTTP and gRPC. A Dockerfile that installs repogen by name from an
index (on PyPI, someone else's `repogen`) cannot pass: the venv's repogen must be this one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from repogen.server.provision.pythons import require_python
from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
IGNORED = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", "*.pyc", ".cache")


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n\s*", "", dockerfile)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


class Image:
    """A scratch root standing for the image's filesystem, and the image's Python."""

    def __init__(self, root: Path, python: Path, context: Path):
        self.root, self.python, self.context, self.workdir = root, python, context, "/"
        self.bin = python.parent

    def path(self, image_path: str) -> Path:
        absolute = image_path if image_path.startswith("/") else f"{self.workdir.rstrip('/')}/{image_path}"
        return self.root / absolute.lstrip("/")

    def map_paths(self, command: str) -> str:
        tops = {p.name for p in self.root.iterdir()} | {"models", "src", "tmp"}
        return re.sub(
            r"(?<![\w./])/(" + "|".join(sorted(tops)) + r")\b", lambda m: f"{self.root}/{m.group(1)}", command
        )

    def copy(self, args: str) -> None:
        parts = args.split()
        if parts[0].startswith("--from="):
            return  # the previous stage wrote into the same root
        source, destination = self.context / parts[0], self.path(parts[1])
        assert source.exists(), f"COPY {parts[0]}: not in the build context {self.context}"
        if source.is_dir():
            shutil.copytree(source, destination, ignore=IGNORED, dirs_exist_ok=True)
        else:
            target = destination / source.name if parts[1].endswith("/") else destination
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)

    def run(self, command: str) -> None:
        cwd = self.path(self.workdir)
        cwd.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.root / "root"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        proc = subprocess.run(["bash", "-c", self.map_paths(command)], cwd=cwd, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, f"RUN {command}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"

    def play(self, dockerfile: str) -> list[str]:
        played = []
        for keyword, args in _instructions(dockerfile):
            if keyword == "WORKDIR":
                self.workdir = args
            elif keyword == "COPY":
                self.copy(args)
            elif keyword == "RUN":
                self.run(args)
            else:
                continue
            played.append(f"{keyword} {args}")
        return played


@pytest.fixture(scope="module")
def image_python(tmp_path_factory) -> Path:
    """A clean venv of NGC 24.10's Python holding what the image holds for it: numpy 1.26.4."""
    venv = tmp_path_factory.mktemp("image") / "python"
    subprocess.run([str(require_python("3.10")), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "numpy==1.26.4"], check=True)
    return venv / "bin" / "python3"


@pytest.fixture(scope="module")
def played(image_python, tmp_path_factory):
    context = tmp_path_factory.mktemp("context")
    shutil.copy2(ROOT / "examples" / "quickstart" / "app.py", context / "app.py")
    repogen = [sys.executable, "-m", "repogen"]
    subprocess.run([*repogen, "build", "app.py:models", "-o", "model_repository"], cwd=context, check=True)
    deploy = [*repogen, "deploy", "model_repository", "--docker", "--app", "app.py:models", "-o", "deploy"]
    subprocess.run(deploy, cwd=context, check=True, capture_output=True)
    shutil.rmtree(context / "model_repository")  # the image builds its own
    dockerfile = (context / "deploy" / "Dockerfile").read_text()
    image = Image(tmp_path_factory.mktemp("root"), image_python, context)
    return image, image.play(dockerfile), dockerfile


def test_the_build_stage_installs_this_repogen_from_the_context_and_builds(played, image_python):
    image, steps, dockerfile = played
    assert [s.split()[0] for s in steps] == ["WORKDIR", "COPY", "RUN", "COPY", "RUN", "COPY"], steps
    assert "pip install --no-cache-dir /tmp/wheels/triton_repogen-" in dockerfile
    shown = subprocess.run([str(image_python), "-m", "pip", "show", "triton-repogen"], capture_output=True, text=True)
    assert "Version: 0.1.0" in shown.stdout
    listed = subprocess.run([str(image_python), "-m", "pip", "list"], capture_output=True, text=True).stdout
    assert not re.search(r"^repogen\s", listed, flags=re.MULTILINE)  # never the unrelated `repogen`
    assert sorted(p.name for p in (image.root / "models").iterdir()) == ["AddSub", "Shout", "repogen.manifest.json"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_what_the_image_built_serves(played, serve, protocol):
    image, _, _ = played
    server = serve(image.root / "models")
    a = np.array([[1.0, 2.0]], dtype=np.float32)
    out = infer(protocol, server, "AddSub", {"a": a, "b": a})
    assert out["add"].tolist() == [[2.0, 4.0]]
