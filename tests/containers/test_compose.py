"""`repogen deploy --compose` writes a compose.yaml that Debian's docker-compose runs.

Both shapes, unchanged, on the app whose two models ship PyYAML: the stock image of the default
release serving the repository from a read-only bind mount (``TRITON_IMAGE`` naming its stand-in),
and with ``--prebuilt`` the image of the Dockerfile written beside it, built by compose. ``up -d``
brings the service to healthy by its healthcheck (one real inference per model), published on
127.0.0.1 only, as uid 1000 with the computed ``shm_size`` and ``restart: unless-stopped``; it
answers over HTTP and gRPC; ``down`` removes its container and network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from runs import ACCESS_KEY, PREFIX, YAML_PAIR, image_name

from repogen.server.running.docker import Container, removing, unique_name
from repogen.server.running.process import free_ports
from repogen.testing.client import PROTOCOLS, infer
from repogen.triton.releases import NEWEST

TEXT = np.array([[b"a: 1\nb: 2.5\nname: x"]], dtype=object)


@pytest.fixture(scope="module", params=["mount", "prebuilt"])
def service(request, standin_image, docker_engine, built_context):
    shape, context = request.param, built_context
    project = unique_name(f"{PREFIX}-compose-{shape}")
    tag = image_name("compose")
    extra = ["--prebuilt", "--image", tag] if shape == "prebuilt" else []
    out = context / f"deploy-{shape}"
    subprocess.run([sys.executable, "-m", "repogen", "deploy", "model_repository", "--compose", *extra, "-o", str(out)],
                   cwd=context, check=True, capture_output=True)  # fmt: skip
    http, grpc, metrics = free_ports(3)
    env = {**os.environ, "TRITON_IMAGE": standin_image(NEWEST.ngc).tag, "REPOGEN_ACCESS_TOKEN": ACCESS_KEY,
           "TRITON_HTTP_PORT": str(http),
           "TRITON_GRPC_PORT": str(grpc), "TRITON_METRICS_PORT": str(metrics)}  # fmt: skip
    compose = [shutil.which("docker-compose") or "docker-compose", "-p", project, "-f", str(out / "compose.yaml")]

    def run(*args, timeout=900):
        done = subprocess.run([*compose, *args], env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"docker-compose {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done

    with removing(docker_engine, "image", tag):
        try:
            start = time.monotonic()
            run("up", "-d")
            ids = run("ps", "-q").stdout.split()
            assert len(ids) == 1, ids
            container = Container(docker_engine, ids[0], {"http": http, "grpc": grpc, "metrics": metrics})
            seconds = container.wait_health("healthy", 300)
            print(f"{shape}: `docker-compose up -d` to healthy in {time.monotonic() - start:.0f} s "
                  f"(healthy {seconds:.0f} s after up returned)")  # fmt: skip
            yield shape, container, (out / "compose.yaml").read_text()
        finally:
            run("down", timeout=300)
            left = docker_engine("ps", "-aq", "--filter", f"label=com.docker.compose.project={project}").stdout
            networks = docker_engine("network", "ls", "-q", "--filter", f"name={project}").stdout
            assert not left.strip() and not networks.strip(), (left, networks)


@pytest.fixture(scope="module")
def built_context(tmp_path_factory):
    context = tmp_path_factory.mktemp("compose")
    shutil.copy2(YAML_PAIR, context / "app.py")
    subprocess.run([sys.executable, "-m", "repogen", "build", "app.py:models", "-o", "model_repository"], cwd=context,
                   check=True, capture_output=True)  # fmt: skip
    return context


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_up_brings_it_to_healthy_and_it_answers(service, protocol):
    _, container, _ = service
    assert infer(protocol, container, "Yaml", {"text": TEXT})["n"].tolist() == [[3]]
    assert infer(protocol, container, "YamlKeys", {"text": TEXT})["keys"].tolist() == [[b"a,b,name"]]


def test_the_service_runs_as_the_file_says(service):
    shape, container, text = service
    config = container.inspect()
    host = config["HostConfig"]
    assert config["Config"]["User"] == "1000:1000" and host["ShmSize"] == 64 << 20
    assert host["RestartPolicy"]["Name"] == "unless-stopped"
    assert {binding["HostIp"] for bindings in host["PortBindings"].values() for binding in bindings} == {"127.0.0.1"}
    mounts = [(m["Destination"], m["RW"]) for m in config["Mounts"]]
    assert mounts == ([("/models", False)] if shape == "mount" else []), mounts
    assert ("build:" in text) == (shape == "prebuilt")
