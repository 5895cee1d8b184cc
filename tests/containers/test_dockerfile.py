"""The Dockerfiles `repogen deploy --docker` writes, built unchanged with `docker build`.

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
import signal
import time

import numpy as np
import pytest
from runs import ACCESS_KEY, PREFIX

from repogen.server.running.docker import unique_name
from repogen.testing.client import PROTOCOLS, infer

TEXT = np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4}"]], dtype=object)


@pytest.fixture(scope="module", params=["copy", "app"])
def image(request, deploy_image):
    built = deploy_image(request.param)
    print(f"{built.mode}: docker build {built.seconds:.0f} s, image +{built.added / 1e6:.1f} MB over {built.base.tag}; "
          f"repository {built.sizes['links once'] / 1e6:.1f} MB on disk, "
          f"{built.sizes['every link'] / 1e6:.1f} MB counting every link")  # fmt: skip
    return built.mode, built.tag, built.dockerfile, built.added, built.sizes


@pytest.fixture(scope="module")
def container(image, docker_engine):
    mode, tag, dockerfile, _, _ = image
    shm = re.search(r"docker run --rm (--shm-size=\S+)", dockerfile)[1]  # what the Dockerfile's header says
    flags = [shm, "-e", f"REPOGEN_ACCESS_TOKEN={ACCESS_KEY}"]  # as the header's `docker run -e` line gives it
    with docker_engine.run(tag, name=unique_name(f"{PREFIX}-dockerfile-{mode}"), flags=flags) as running:
        start = time.monotonic()
        running.wait_health("healthy", 300)
        print(f"{mode}: healthy {time.monotonic() - start:.0f} s after `docker run`")
        yield running


def test_the_image_is_the_stand_in_plus_the_repository(image, docker_engine):
    mode, tag, dockerfile, added, sizes = image
    config = docker_engine.inspect("image", tag)["Config"]
    assert config["User"] == "1000:1000" and "exec tritonserver --model-repository=/models" in config["Cmd"][-1]
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
