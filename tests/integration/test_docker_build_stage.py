"""The Dockerfiles `repogen deploy --docker` writes build: they are played here without Docker.

There is no Docker engine on the machines this runs on, so each generated Dockerfile is parsed and
played as Docker would: COPY takes only what is in the build context, in order (a file the Dockerfile
uses before copying it fails here as in `docker build`), RUN runs in a clean venv of the image's
Python (3.10 for 24.10, holding numpy 1.26.4 as the image does, nothing else), with the image's
absolute paths mapped under a scratch root. Both modes are played on an app that imports a
third-party package (PyYAML): the default copies the repository built here; ``--app`` rebuilds it in
the build stage with the repogen installed there from the wheel beside the Dockerfile. What lands in
``/models`` is then served by the embedded server (numpy-only, as the stock image) and answers over
HTTP and gRPC, and the HEALTHCHECK runs against it with the image's Python. A Dockerfile that installs
repogen by name from an index (on PyPI, someone else's `repogen`) cannot pass: the venv's must be ours.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from repogen.server.provision.pythons import require_python
from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "apps" / "packages" / "yaml_only.py"
MODES = {"copy": [], "app": ["--app", "app.py:models"]}
"""The deploy arguments of each mode: the default copies the repository built here, --app rebuilds it in the image."""
STEPS = {
    "copy": [r"COPY model_repository /models"],
    "app": [
        r"WORKDIR /src",
        r"RUN python3 -m pip install --no-cache-dir PyYAML==[\d.]+",  # what the app imports, to build it
        r"COPY deploy/triton_repogen-0\.1\.0-py3-none-any\.whl /tmp/wheels/",
        r"RUN python3 -m pip install --no-cache-dir /tmp/wheels/triton_repogen-0\.1\.0-py3-none-any\.whl .*",
        r"COPY \. /src",
        r"RUN repogen build /src/app\.py:models -o /models",
        r"COPY --from=build /models /models",
    ],
}
"""Each mode's WORKDIR, COPY and RUN steps, in order."""


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n\s*", "", dockerfile)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def _dockerignore(text: str) -> list[tuple[bool, re.Pattern[str]]]:
    """(exclude?, pattern) per line of a .dockerignore, as Docker's pattern matcher reads them."""
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated, line = line.startswith("!"), line.lstrip("!").strip("/")
        regex = ""
        for token in re.split(r"(\*\*/|\*\*|\*|\?)", line):
            regex += {"**/": "(.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(token, re.escape(token))
        rules.append((not negated, re.compile(regex)))
    return rules


def _ignored(rules: list[tuple[bool, re.Pattern[str]]], path: str) -> bool:
    """The last rule matching the path or one of its parent directories decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for exclude, pattern in rules:
        if any(pattern.fullmatch(candidate) for candidate in candidates):
            ignored = exclude
    return ignored


class Image:
    """A scratch root standing for the image's filesystem, and the image's Python."""

    def __init__(self, root: Path, python: Path, context: Path, dockerignore: str):
        self.root, self.python, self.context, self.workdir = root, python, context, "/"
        self.bin = python.parent
        self.rules = _dockerignore(dockerignore)

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
        relative = source.relative_to(self.context).as_posix()
        assert source.exists() and not _ignored(self.rules, relative), f"COPY {parts[0]}: not in the build context"
        if source.is_dir():  # what the .dockerignore leaves out of the context is not there to copy
            for path in sorted(source.rglob("*")):
                if path.is_file() and not _ignored(self.rules, path.relative_to(self.context).as_posix()):
                    target = destination / path.relative_to(source)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)
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
        """Every WORKDIR, COPY and RUN up to the CMD that would start tritonserver (which cannot run here)."""
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


def _clean_venv(path: Path) -> Path:
    """A venv of NGC 24.10's Python holding what the image holds for it: numpy 1.26.4."""
    subprocess.run([str(require_python("3.10")), "-m", "venv", str(path)], check=True)
    subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", "numpy==1.26.4"], check=True)
    return path / "bin" / "python3"


def _installed(python: Path) -> list[str]:
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True)
    return sorted(package["name"] for package in json.loads(listed.stdout))


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module", params=list(MODES))
def played(request, tmp_path_factory):
    mode = request.param
    context = tmp_path_factory.mktemp(f"context-{mode}")
    shutil.copy2(APP, context / "app.py")
    repogen = [sys.executable, "-m", "repogen"]
    subprocess.run([*repogen, "build", "app.py:models", "-o", "model_repository"], cwd=context, check=True)
    deploy = [*repogen, "deploy", "model_repository", "--docker", *MODES[mode], "-o", "deploy"]
    subprocess.run(deploy, cwd=context, check=True, capture_output=True)
    if mode == "app":
        shutil.rmtree(context / "model_repository")  # the image builds its own
    dockerfile = (context / "deploy" / "Dockerfile").read_text()
    dockerignore = (context / "deploy" / "Dockerfile.dockerignore").read_text()  # BuildKit reads it beside the file
    python = _clean_venv(tmp_path_factory.mktemp(f"image-{mode}") / "python")
    image = Image(tmp_path_factory.mktemp(f"root-{mode}"), python, context, dockerignore)
    start = time.monotonic()
    steps = image.play(dockerfile)
    print(f"{mode}: played {len(steps)} steps in {time.monotonic() - start:.1f} s")
    return mode, image, steps, dockerfile


@pytest.fixture(scope="module")
def served(played, serve):
    """The embedded server (numpy-only, as the stock image) on what the image holds in /models."""
    return serve(played[1].root / "models")


def test_the_dockerfile_plays_to_a_repository_uid_1000_can_read(played):
    mode, image, steps, dockerfile = played
    assert len(steps) == len(STEPS[mode]) and all(map(re.fullmatch, STEPS[mode], steps)), steps
    assert sorted(p.name for p in (image.root / "models").iterdir()) == [
        "Yaml",
        "repogen.manifest.json",
        "sbom.cdx.json",
    ]
    assert (image.root / "models" / "Yaml" / "1" / "packages" / "cp310-x86_64" / "yaml").is_dir()  # it ships
    for path in (image.root / "models").rglob("*"):  # the final stage runs as USER 1000:1000
        assert path.stat().st_mode & stat.S_IROTH, f"{path} is not readable by uid 1000"
    installed = set(_installed(image.python)) - {"pip", "setuptools"}
    assert "repogen" not in installed  # never the unrelated `repogen`
    if mode == "copy":  # the repository is the whole deployment, every file of it; nothing is installed
        built = image.context / "model_repository"
        assert _files(image.root / "models") == _files(built)  # the shipped packages' bytecode too
        assert installed == {"numpy"} and not (image.root / "src").exists()
    else:  # the build stage installed this repogen, from the wheel in the context
        assert {"triton-repogen", "PyYAML", "numpy"} <= installed
        shown = subprocess.run([str(image.python), "-m", "pip", "show", "-f", "triton-repogen"], capture_output=True,
                               text=True).stdout  # fmt: skip
        assert "Version: 0.1.0" in shown and "repogen/deploy/wheel.py" in shown


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_what_the_image_holds_serves(served, protocol):
    text = np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4}"]], dtype=object)
    assert infer(protocol, served, "Yaml", {"text": text})["n"].tolist() == [[3], [1]]


def test_its_healthcheck_passes_with_the_images_python(played, served):
    _, image, _, dockerfile = played
    line = next(line for line in dockerfile.splitlines() if line.startswith("HEALTHCHECK "))
    command = json.loads(line.split(" CMD ", 1)[1])
    assert command[0] == "python3" and command[3] == "http://127.0.0.1:8000"
    argv = [str(image.python), *command[1:3], f"http://{served.http_url}", *command[4:]]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
