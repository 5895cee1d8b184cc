"""Issue 31, section 2, item 3: the Dockerfiles `repogen deploy --docker` writes, built unchanged with `docker build`.

Both modes, on an app whose two models ship PyYAML (tests/apps/containers/yaml_pair.py): the default
copies the repository built here (``COPY model_repository /models``), ``--app`` rebuilds it in a build
stage with the repogen wheel written beside the Dockerfile. Each is built by the engine's classic
builder with ``--build-arg TRITON_IMAGE=<stand-in>`` for the release `repogen deploy` targets by
default, run as its ``CMD`` and ``USER`` say, turns healthy by its own HEALTHCHECK and answers over
HTTP and gRPC. In the copy mode a stub is then SIGKILLed and the HEALTHCHECK turns the container
unhealthy, naming the model; the image's layer is compared with the repository on disk (hard links
kept through COPY). This replaces playing the Dockerfile without Docker.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from runs import PREFIX, ROOT, disk_usage, image_name

from repogen.server.running.docker import removing, unique_name
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.standin import standin_for
from repogen.triton.releases import NEWEST

APP = ROOT / "tests" / "apps" / "containers" / "yaml_pair.py"
MODES = {"copy": [], "app": ["--app", "app.py:models"]}
TEXT = np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4}"]], dtype=object)


def _repogen(*args, cwd):
    return subprocess.run([sys.executable, "-m", "repogen", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module", params=list(MODES))
def image(request, standin_image, docker_engine, tmp_path_factory):
    mode = request.param
    context = tmp_path_factory.mktemp(f"context-{mode}")
    shutil.copy2(APP, context / "app.py")
    _repogen("build", "app.py:models", "-o", "model_repository", cwd=context)
    _repogen("deploy", "model_repository", "--docker", *MODES[mode], "-o", "deploy", cwd=context)
    sizes = {"links once": disk_usage(context / "model_repository", False),
             "every link": disk_usage(context / "model_repository", True)}  # fmt: skip
    if mode == "app":
        shutil.rmtree(context / "model_repository")  # the image builds its own
    dockerfile = (context / "deploy" / "Dockerfile").read_text()
    base = standin_image(NEWEST.ngc)
    assert base.standin == standin_for(NEWEST)  # the release `repogen deploy` targets by default
    tag, stage = image_name(f"dockerfile-{mode}"), image_name(f"dockerfile-{mode}-build")
    build = [
        "build",
        "-f",
        str(context / "deploy" / "Dockerfile"),
        "--build-arg",
        f"TRITON_IMAGE={base.tag}",
        str(context),
    ]
    builder = docker_engine.with_env(DOCKER_BUILDKIT="0")  # BuildKit would pull the `# syntax=` image
    with removing(docker_engine, "image", tag, stage):
        start = time.monotonic()
        if mode == "app":  # the build stage tagged too, so that it is removed with the image
            builder(build[0], "--target", "build", "-t", stage, *build[1:], timeout=1200)
        builder(build[0], "-t", tag, *build[1:], timeout=1200)
        seconds = time.monotonic() - start
        added = docker_engine.inspect("image", tag)["Size"] - base.size
        print(
            f"{mode}: docker build {seconds:.0f} s, image +{added / 1e6:.1f} MB over {base.tag}; repository "
            f"{sizes['links once'] / 1e6:.1f} MB on disk, {sizes['every link'] / 1e6:.1f} MB counting every link"
        )
        yield mode, tag, dockerfile, added, sizes


@pytest.fixture(scope="module")
def container(image, docker_engine):
    mode, tag, dockerfile, _, _ = image
    shm = re.search(r"docker run --rm (--shm-size=\S+)", dockerfile)[1]  # what the Dockerfile's header says
    with docker_engine.run(tag, name=unique_name(f"{PREFIX}-dockerfile-{mode}"), flags=[shm]) as running:
        start = time.monotonic()
        running.wait_health("healthy", 300)
        print(f"{mode}: healthy {time.monotonic() - start:.0f} s after `docker run`")
        yield running


def test_the_image_is_the_stand_in_plus_the_repository(image, docker_engine):
    mode, tag, dockerfile, added, sizes = image
    config = docker_engine.inspect("image", tag)["Config"]
    assert config["User"] == "1000:1000" and config["Cmd"] == ["tritonserver", "--model-repository=/models"]
    assert config["Healthcheck"]["Test"][:2] == ["CMD", "python3"]
    if mode == "copy":  # one layer holding the repository, its hard links kept (each file once)
        assert added < sizes["links once"] * 1.1 < sizes["every link"], (added, sizes)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_it_turns_healthy_by_its_own_healthcheck_and_answers(container, protocol):
    assert container.exec("id", "-u").stdout.strip() == "1000"
    assert infer(protocol, container, "Yaml", {"text": TEXT})["n"].tolist() == [[3], [1]]
    assert infer(protocol, container, "YamlKeys", {"text": TEXT})["keys"].tolist() == [[b"a,b,name"], [b"w"]]


@pytest.mark.parametrize("image", ["copy"], indirect=True)  # the HEALTHCHECK is the same line in both modes
def test_a_killed_stub_turns_it_unhealthy_naming_the_model(image, container):
    top = container.engine("top", container.name, "-eo", "pid,args").stdout.splitlines()
    stub = next(int(line.split()[0]) for line in top if "triton_python_backend_stub /models/Yaml/1/" in line)
    os.kill(stub, signal.SIGKILL)  # as the kernel's OOM killer would
    seconds = container.wait_health("unhealthy", 180)
    log = container.inspect()["State"]["Health"]["Log"]
    print(f"unhealthy {seconds:.0f} s after SIGKILL of the Yaml stub; last check: {log[-1]['Output'].strip()}")
    assert "model 'Yaml' does not answer" in log[-1]["Output"] and "is not healthy" in log[-1]["Output"]
    assert infer("http", container, "YamlKeys", {"text": TEXT})["keys"].tolist() == [[b"a,b,name"], [b"w"]]
