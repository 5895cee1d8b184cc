"""The Deployment `repogen deploy --k8s` writes, run as a pod runs it.

``repogen.testing.pod`` reads the generated manifest (PyYAML) and runs its container with the
``docker run`` flags that do what the kubelet does (``args``, the ``securityContext``: uid/gid 1000,
``runAsNonRoot``, no privilege escalation, every capability dropped; the memory ``emptyDir`` on
``/dev/shm`` with its ``sizeLimit``; the memory and CPU limits), on the image `repogen deploy --docker`
builds, then runs its probes as the kubelet would: the startup and readiness ``httpGet`` from outside,
the liveness ``exec`` (one real inference per model) inside. They pass on a healthy server; after a
stub is SIGKILLed, liveness fails ``failureThreshold`` times in a row, when the kubelet restarts it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from runs import ACCESS_KEY, PREFIX, secrets_of

from repogen.server.running.docker import unique_name
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.pod import Pod

TEXT = np.array([[b"a: 1\nb: 2"]], dtype=object)


@pytest.fixture(scope="module")
def pod(deploy_image, docker_engine):
    image = deploy_image("copy")
    manifest = subprocess.run(
        [sys.executable, "-m", "repogen", "deploy", "model_repository", "--k8s", "--image", image.tag],
        cwd=image.context, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    pod = Pod.from_manifest(manifest, secrets=secrets_of(manifest))  # the access key's Secret, created
    with pod.run(docker_engine, unique_name(f"{PREFIX}-pod")):
        print(f"docker run {' '.join(pod.docker_flags())} {image.tag} {' '.join(pod.arguments())}")
        print(f"startup probe passed {pod.wait_started():.0f} s after the container started")
        yield pod


def test_the_container_runs_as_the_security_context_says(pod):
    flags = pod.docker_flags()
    assert flags[:2] == ["--user", "1000:1000"] and "--cap-drop=ALL" in flags and "no-new-privileges" in flags
    assert any(arg.startswith("--http-restricted-api=") and arg.endswith(ACCESS_KEY) for arg in pod.arguments())
    assert "--shm-size=67108864" in flags and "--memory=4294967296" in flags and "--cpus=2" in flags
    state = pod.container.inspect()["HostConfig"]
    assert state["CapDrop"] == ["ALL"] and state["ShmSize"] == 64 << 20 and state["Memory"] == 4 << 30
    status = pod.container.exec("grep", "-E", "^(Uid|Gid|CapEff|NoNewPrivs)", "/proc/1/status").stdout
    fields = dict(line.split(":", 1) for line in status.splitlines())
    assert fields["Uid"].split()[0] == fields["Gid"].split()[0] == "1000"
    assert int(fields["CapEff"], 16) == 0 and fields["NoNewPrivs"].strip() == "1"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_it_serves_and_its_probes_pass(pod, protocol):
    assert infer(protocol, pod.container, "Yaml", {"text": TEXT})["n"].tolist() == [[2]]
    for which in ("startupProbe", "readinessProbe", "livenessProbe"):
        result = pod.probe(which)
        assert result.passed, (which, result)


def test_liveness_fails_after_a_stub_is_killed_and_the_kubelet_would_restart_it(pod):
    top = pod.container.engine("top", pod.container.name, "-eo", "pid,args").stdout.splitlines()
    stub = next(int(line.split()[0]) for line in top if "triton_python_backend_stub /models/YamlKeys/1/" in line)
    os.kill(stub, signal.SIGKILL)
    assert pod.probe("readinessProbe").passed  # /v2/health/ready stays 200 with a dead stub on 2.51
    seconds, runs = pod.until_failed("livenessProbe", timeout=180)
    print(f"liveness failed {len(runs)} times in a row {seconds:.0f} s after the kill: {runs[-1].detail}")
    assert "model 'YamlKeys' does not answer" in runs[-1].detail and "is not healthy" in runs[-1].detail
    # each failed run failed on the models' answers (the probe's outcome), none for time
    assert all("model 'YamlKeys' does not answer" in run.detail for run in runs if not run.passed), runs
