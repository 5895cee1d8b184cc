"""The stand-ins for NGC's tritonserver images are what such an image gives a model.

Each stand-in (``repogen.testing.standin``) is checked from inside: its Python and nothing but numpy
1.26.4 (and pip), ``tritonserver`` of its release on PATH with the stub for that Python, user
``triton-server`` 1000:1000, ``WORKDIR /opt/tritonserver``, an entrypoint that runs the command it is
given; then it serves the quickstart as the README's ``docker run`` line does, over HTTP and gRPC.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from runs import PREFIX

from repogen.server.running.docker import unique_name
from repogen.server.running.leftovers import end_leftover_stubs
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.standin import STANDINS, ensure_standin

TAGS = [s.tag.rsplit(":", 1)[1] for s in STANDINS]
FACTS = r"""
import json, os, shutil, subprocess, sys
import numpy
pip = subprocess.run([sys.executable, "-m", "pip", "list", "--format=json"], capture_output=True, text=True)
ids = subprocess.run(["id", "triton-server"], capture_output=True, text=True).stdout.split()
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2], "executable": sys.executable, "numpy": numpy.__version__,
    "installed": sorted(p["name"] for p in json.loads(pip.stdout)), "tritonserver": shutil.which("tritonserver"),
    "stub": os.path.exists("/opt/tritonserver/backends/python/triton_python_backend_stub"),
    "ids": ids[:2], "cwd": os.getcwd(), "uid": os.getuid(),
    "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""), "version": os.environ.get("TRITON_SERVER_VERSION"),
}))
"""


@pytest.mark.parametrize("tag", TAGS)
def test_a_standin_gives_a_model_what_the_ngc_image_gives(standin_image, docker_engine, tag):
    image = standin_image(tag)
    standin = image.standin
    done = docker_engine("run", "--rm", image.tag, "python3", "-c", FACTS, timeout=300)
    facts = json.loads(done.stdout.strip().splitlines()[-1])  # after the entrypoint's banner, as NVIDIA's prints one
    assert "repogen stand-in" in done.stdout and "NOT NVIDIA's image" in done.stdout
    assert facts["python"] == standin.python and facts["executable"] == "/usr/local/bin/python3"
    assert facts["numpy"] == standin.release.numpy == "1.26.4"
    assert facts["installed"] == ["numpy", "pip"]
    assert facts["tritonserver"] == "/opt/tritonserver/bin/tritonserver" and facts["stub"]
    assert facts["version"] == standin.release.tritonserver
    assert facts["ids"] == ["uid=1000(triton-server)", "gid=1000(triton-server)"]
    assert facts["cwd"] == "/opt/tritonserver" and facts["uid"] == 0  # root by default, as NGC's images
    assert facts["ld_library_path"].split(":")[0] == "/usr/local/lib"  # the serving Python's libpython first
    config = docker_engine.inspect("image", image.tag)["Config"]
    assert config["Entrypoint"] == ["/opt/nvidia/nvidia_entrypoint.sh"] and not config["Cmd"]
    assert config["Labels"]["org.repogen.standin.pairing"] == standin.label


@pytest.fixture(scope="module", params=TAGS)
def quickstart(request, standin_image, docker_engine, built):
    """The README's used-by line on a stand-in: the quickstart mounted read-only at /models, run as the image's user."""
    image = standin_image(request.param)
    repository = built("examples/quickstart/app.py:models")
    flags = ["--shm-size=64m", "-v", f"{repository}:/models:ro"]
    name = unique_name(f"{PREFIX}-standin-quickstart")
    with docker_engine.run(image.tag, ["tritonserver", "--model-repository=/models"], name=name, flags=flags) as served:
        served.wait_ready(180)
        yield image, served


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_standin_serves_the_quickstart_as_the_readme_runs_it(quickstart, protocol):
    image, container = quickstart
    a, b = np.array([[1.0, 2.0]], dtype=np.float32), np.array([[3.0, 5.0]], dtype=np.float32)
    answer = infer(protocol, container, "AddSub", {"a": a, "b": b})
    assert answer["add"].tolist() == [[4.0, 7.0]] and answer["sub"].tolist() == [[-2.0, -3.0]]
    shout = infer(protocol, container, "Shout", {"text": np.array([[b"hi"]], dtype=object)})
    assert shout["loud"].tolist() == [[b"HI!"]]
    assert f"Triton Inference Server {image.standin.release.ngc}" in container.logs()


def test_repogen_serve_on_the_host_leaves_a_containers_stubs_alone(quickstart):
    """Stubs in a container name their server by its pid there (1); the host's leftover sweep must not end them."""
    _, container = quickstart
    ended = end_leftover_stubs()
    assert not [leftover for leftover in ended if leftover.stub.server_pid == 1], [e.describe() for e in ended]
    answer = infer("http", container, "AddSub", {"a": np.ones((1, 1), np.float32), "b": np.ones((1, 1), np.float32)})
    assert answer["add"].tolist() == [[2.0]]


def test_a_standin_is_rebuilt_only_when_its_inputs_change(standin_image, docker_engine, repogen_cache_dir):
    first = standin_image("24.10")
    again = ensure_standin("24.10", cache_dir=repogen_cache_dir, docker=docker_engine, log=lambda _: None)
    assert again.built_s is None and again.image_id == first.image_id
