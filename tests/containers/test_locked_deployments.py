"""A generated deployment keeps the admin APIs behind the key on a stand-in of NGC 24.10.

`repogen deploy --docker`'s Dockerfile is built FROM the stand-in and run as its header says: without
`-e REPOGEN_ACCESS_TOKEN` the container exits before starting the server, with it each restricted API
is refused without the key (HTTP 403, gRPC UNAVAILABLE, Triton's own answers) and answers with it, and
the HEALTHCHECK turns healthy. The Kubernetes Deployment's container is then run as the kubelet runs it
(its ``args`` with ``$(REPOGEN_ACCESS_TOKEN)`` expanded from the Secret's value, that value in its
environment), with every API restricted: its liveness and readiness ``exec`` probes pass inside the
container, and `repogen status` works with the key. KServe's stock Triton runtime, given the
InferenceService's ``args`` after its own as KServe gives them, keeps the key too.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import DOCKERFILE, DOCKERIGNORE, K8S_FILE, KSERVE_FILE
from repogen.server.running.docker import removing, unique_name
from repogen.testing.api_probes import GRPC_CALLS, HTTP_CALLS, ask_grpc, ask_http
from repogen.triton.restricted_apis import APIS, DEFAULT_RESTRICTED

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "24.10"


@pytest.fixture(scope="module")
def image(standin_image, docker_engine, built, tmp_path_factory):
    """The quickstart's generated Dockerfile, built on the stand-in: what `docker build` makes of it."""
    base = standin_image(RELEASE)
    context = tmp_path_factory.mktemp("context")
    repository = context / "model_repository"
    subprocess.run(["cp", "-r", str(built("examples/quickstart/app.py:models")), str(repository)], check=True)
    files = generate(repository, DeployOptions(docker=True, k8s=True, triton_release=RELEASE, context=context)).files
    (context / DOCKERFILE).write_text(files[DOCKERFILE])
    (context / f"{DOCKERFILE}.dockerignore").write_text(files[DOCKERIGNORE])
    tag = f"{unique_name('repogen-i36-quickstart')}:1"
    classic = docker_engine.with_env(DOCKER_BUILDKIT="0")  # BuildKit would pull the `# syntax=` frontend
    with removing(docker_engine, "image", tag):
        classic("build", "-q", "-f", str(context / DOCKERFILE), "--build-arg", f"TRITON_IMAGE={base.tag}", "-t", tag,
                str(context))  # fmt: skip
        yield tag, files


def test_without_the_key_the_container_does_not_start(image, docker_engine):
    tag, _ = image
    name = unique_name("repogen-i36-nokey")
    done = docker_engine("run", "--name", name, "--shm-size=64m", tag, check=False, timeout=120)
    docker_engine("rm", "-f", name, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "REPOGEN_ACCESS_TOKEN: the restricted APIs need a key: docker run -e REPOGEN_ACCESS_TOKEN=KEY" in (
        done.stderr
    )
    assert "Started GRPCInferenceService" not in done.stdout + done.stderr


def test_the_docker_deployment_answers_each_api_as_restricted(image, docker_engine):
    tag, files = image
    (healthcheck,) = [line for line in files[DOCKERFILE].splitlines() if line.startswith("HEALTHCHECK ")]
    assert "REPOGEN_ACCESS_TOKEN" not in healthcheck  # inference stays open: the check sends no key ...
    key = secrets.token_urlsafe(32)
    keyed = docker_engine.with_env(REPOGEN_ACCESS_TOKEN=key)  # `-e NAME` takes the value from the client's env
    with keyed.run(
        tag, name=unique_name("repogen-i36-docker"), flags=["--shm-size=64m", "-e", "REPOGEN_ACCESS_TOKEN"]
    ) as served:
        served.wait_ready(180)
        served.wait_health("healthy", 120)  # ... and passes: DockerError naming the last status otherwise
        answers = {}
        for api in HTTP_CALLS:
            answers[api] = (ask_http(served.http_url, api), ask_http(served.http_url, api, key))
        for api in GRPC_CALLS:
            answers[f"grpc {api}"] = (ask_grpc(served.grpc_url, api), ask_grpc(served.grpc_url, api, key))
        assert key not in json.dumps(docker_engine.inspect("image", tag))  # never in the image
    refused_http = (403, json.dumps({"error": "This API is restricted, expecting header 'triton-access-token'"}))
    refused_grpc = (
        "StatusCode.UNAVAILABLE: This protocol is restricted, expecting header "
        "'triton-grpc-protocol-triton-access-token'"
    )
    for api in HTTP_CALLS:
        (status, body), (keyed_status, _) = answers[api]
        without = (status, json.dumps(json.loads(body)) if status == 403 else None)
        assert without == (refused_http if api in DEFAULT_RESTRICTED else (200, None)), api
        assert keyed_status == 200, api
        assert answers[f"grpc {api}"] == ((refused_grpc if api in DEFAULT_RESTRICTED else "OK"), "OK"), api


def test_the_kubernetes_container_with_every_api_restricted_passes_its_probes(image, docker_engine, built):
    """The Deployment's container as the kubelet starts it, and its exec probes as it runs them."""
    tag, _ = image
    repository = built("examples/quickstart/app.py:models")
    manifest = generate(repository, DeployOptions(k8s=True, triton_release=RELEASE, restrict=APIS)).files[K8S_FILE]
    (container,) = next(yaml.safe_load_all(manifest))["spec"]["template"]["spec"]["containers"]
    key = secrets.token_urlsafe(32)  # what `kubectl create secret generic ...` would hold
    env = {item["name"]: key for item in container["env"]}
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], arg) for arg in container["args"]]  # the kubelet's expansion
    keyed = docker_engine.with_env(**env)
    flags = ["--shm-size=64m", "--user", "1000:1000", *(f for name in env for f in ("-e", name))]
    with keyed.run(tag, args, name=unique_name("repogen-i36-k8s"), flags=flags) as served:
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            command = container[probe]["exec"]["command"]
            for _ in range(120):
                done = served.exec(*command)
                if done.returncode == 0:
                    break
                subprocess.run(["sleep", "1"], check=True)
            assert done.returncode == 0, (probe, done.stderr, served.logs_tail())
        status = subprocess.run(
            [sys.executable, "-m", "repogen", "status", "--url", served.http_url, "--access-token", key],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert status.returncode == 0 and "AddSub" in status.stdout, status.stderr
        assert ask_http(served.http_url, "health")[0] == 403 and ask_http(served.http_url, "health", key)[0] == 200
        assert ask_grpc(served.grpc_url, "inference").startswith("StatusCode.UNAVAILABLE: This protocol is restricted")


# KServe's kserve-tritonserver ClusterServingRuntime starts the stock image with these; KServe appends the
# InferenceService's predictor.model.args to them (MergeRuntimeContainers concatenates args) and merges env.
KSERVE_RUNTIME_ARGS = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
                       "--allow-grpc=true", "--allow-http=true"]  # fmt: skip


def test_kserves_stock_runtime_with_the_inference_services_args_keeps_the_key(standin_image, docker_engine, built):
    """The stock image (no repogen image), the repository where KServe's storage initializer puts it."""
    repository = built("examples/quickstart/app.py:models")
    isvc = generate(repository, DeployOptions(kserve=True, triton_release=RELEASE)).files[KSERVE_FILE]
    model = yaml.safe_load(isvc)["spec"]["predictor"]["model"]
    key = secrets.token_urlsafe(32)
    env = {item["name"]: key for item in model["env"]}
    args = KSERVE_RUNTIME_ARGS + [re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], arg) for arg in model["args"]]
    flags = [
        "--shm-size=64m",
        "--user",
        "1000:1000",
        "-v",
        f"{repository}:/mnt/models:ro",
        "-e",
        "REPOGEN_ACCESS_TOKEN",
    ]
    keyed = docker_engine.with_env(**env)
    name = unique_name("repogen-i36-kserve")
    with keyed.run(
        standin_image(RELEASE).tag, args, name=name, flags=flags, publish={"http": 8080, "grpc": 9000}
    ) as served:
        served.wait_ready(180)
        liveness = served.exec(*model["livenessProbe"]["exec"]["command"])
        assert liveness.returncode == 0, liveness.stderr
        assert ask_http(served.http_url, "model-repository")[0] == 403
        assert ask_http(served.http_url, "model-repository", key)[0] == 200
        assert ask_grpc(served.grpc_url, "statistics").startswith("StatusCode.UNAVAILABLE: This protocol is restricted")
        assert ask_grpc(served.grpc_url, "statistics", key) == "OK"
        assert ask_http(served.http_url, "inference")[0] == 200
