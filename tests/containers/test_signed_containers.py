"""What `repogen deploy --verify-key` writes, run for real: a tampered repository never reaches tritonserver.

The quickstart, built with ``--sign-key`` (a P-256 key made here), and a copy with one ``config.pbtxt`` changed,
on the 24.10 stand-in (``repogen.testing.standin``):

* **Docker**: the generated Dockerfile, built unchanged with the classic builder. Its ``verify`` stage (built
  alone with ``--target verify``) fails on the tampered repository, naming the file; on the signed one the
  whole image builds and serves.
* **Kubernetes**: the generated Deployment's init container, run as a pod would (``command``, its
  securityContext, the key from the ConfigMap's data as a read-only mount), on the image's own ``/models``
  (passes, then the server container starts and answers) and on the tampered repository mounted at
  ``/models`` (exit 1, the file in its log; the server container never starts).
* **KServe** with a storage URI: the init container copies the verifier out of the image above into an
  ``emptyDir``; the stock runtime's container (the plain stand-in), with the generated ``command`` and
  KServe's Triton runtime ``args`` appended, as KServe merges them, verifies ``/mnt/models`` first: the
  tampered copy stops it before tritonserver starts, the signed one is served on KServe's ports.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from repogen.server.running.docker import Engine, removing, unique_name
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.signing import KeyPair, copy_repository, ec_key

ROOT = Path(__file__).resolve().parents[2]
KSERVE_RUNTIME_ARGS = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
                       "--allow-grpc=true", "--allow-http=true"]  # fmt: skip
"""The args of KServe's kserve-tritonserver runtime; KServe appends the InferenceService model's own args to them."""
TAMPERED_FILE = "AddSub/config.pbtxt"
ACCESS_KEY = "repogen-i33-access-key"
"""What the access Secret (the admin APIs need a key) holds in these runs."""


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return ec_key(tmp_path_factory.mktemp("key"), "signer")


@pytest.fixture(scope="module")
def context(built, key: KeyPair, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build context: the signed quickstart, a tampered copy, and the deployment files for both."""
    root = tmp_path_factory.mktemp("context")
    signed = built("examples/quickstart/app.py:models", "--sign-key", str(key.private))
    copy_repository(signed, root / "model_repository")
    tampered = copy_repository(signed, root / "tampered")
    config = tampered / TAMPERED_FILE
    config.write_text(config.read_text() + "# edited after signing\n")
    return root


def _deploy(repository: Path, out: Path, *args: str) -> dict[str, str]:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "repogen", "deploy", str(repository), "-o", str(out), "--triton-release", "24.10",
           *args]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {p.name: p.read_text() for p in out.iterdir()}


@pytest.fixture(scope="module")
def image(context: Path, key: KeyPair, standin_image, docker_engine: Engine) -> Iterator[str]:
    """The generated Dockerfile's image of the signed repository (and its verify stage, tagged to be removed)."""
    base = standin_image("24.10").tag
    _deploy(context / "model_repository", context / "deploy", "--docker", "--verify-key", str(key.public),
            "--context", str(context))  # fmt: skip
    tag = unique_name("repogen-i33-signed")
    builder = docker_engine.with_env(DOCKER_BUILDKIT="0")  # the classic builder: BuildKit would pull its frontend
    with removing(docker_engine, "image", f"{tag}:verify", f"{tag}:1"):
        for target, name in (("verify", f"{tag}:verify"), (None, f"{tag}:1")):
            args = ["build", "--force-rm", "-f", str(context / "deploy" / "Dockerfile"), "-t", name]
            args += [*(["--target", target] if target else []), "--build-arg", f"TRITON_IMAGE={base}", str(context)]
            builder(*args, timeout=900)
        yield f"{tag}:1"


def test_docker_build_refuses_a_tampered_repository_in_its_verify_stage(
    context: Path, key: KeyPair, image: str, standin_image, docker_engine: Engine
) -> None:
    dockerfile = (context / "deploy" / "Dockerfile").read_text().replace("COPY model_repository ", "COPY tampered ")
    (context / "deploy" / "Dockerfile.tampered").write_text(dockerfile)
    tag = unique_name("repogen-i33-tampered")
    builder = docker_engine.with_env(DOCKER_BUILDKIT="0")
    done = builder("build", "--force-rm", "-f", str(context / "deploy" / "Dockerfile.tampered"), "-t", tag,
                   "--build-arg", f"TRITON_IMAGE={standin_image('24.10').tag}", str(context),
                   check=False, timeout=900)  # fmt: skip
    _remove_untagged_steps(docker_engine, done.stdout)
    assert done.returncode != 0
    assert _names_the_file(done.stdout + done.stderr)
    assert docker_engine.inspect("image", tag) is None  # no image holds the tampered files


def _names_the_file(log: str) -> bool:
    """Upstream's refusal, which quotes the file inside a Python list (so its quotes may come escaped)."""
    return re.search(r"Hash mismatch for \\*'" + re.escape(TAMPERED_FILE), log) is not None


def _remove_untagged_steps(docker_engine: Engine, output: str) -> None:
    """The classic builder keeps a failed build's steps as untagged images: remove those (never a tagged one)."""
    for step in reversed(re.findall(r"---> ([0-9a-f]{12})\b", output)):
        found = docker_engine.inspect("image", step)
        if found is not None and not found.get("RepoTags"):
            docker_engine("rmi", step, check=False, timeout=120)  # one a cached image still uses is kept


def test_the_verified_image_serves(image: str, docker_engine: Engine) -> None:
    name = unique_name("repogen-i33-served")
    flags = ["--shm-size=64m", "-e", f"REPOGEN_ACCESS_TOKEN={ACCESS_KEY}"]
    with docker_engine.run(image, [], name=name, flags=flags) as served:
        served.wait_ready(180)
        _answers(served)
        assert served.exec("test", "-d", "/opt/model-signing/model_signing").returncode == 0  # for init containers


def _answers(server: Any) -> None:
    a, b = np.array([[1.0, 2.0]], dtype=np.float32), np.array([[3.0, 5.0]], dtype=np.float32)
    for protocol in PROTOCOLS:
        assert infer(protocol, server, "AddSub", {"a": a, "b": b})["add"].tolist() == [[4.0, 7.0]]


def _flags(spec: Mapping[str, Any], volumes: Mapping[str, str | None]) -> tuple[list[str], list[str]]:
    """A pod's container as ``docker run`` flags and arguments; a volume mapped to None is the memory /dev/shm."""
    flags: list[str] = []
    security = spec.get("securityContext", {})
    if "runAsUser" in security:
        flags += ["--user", f"{security['runAsUser']}:{security.get('runAsGroup', security['runAsUser'])}"]
    flags += [arg for cap in security.get("capabilities", {}).get("drop", []) for arg in ("--cap-drop", cap)]
    if security.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt", "no-new-privileges"]
    for mount in spec.get("volumeMounts", []):
        source = volumes[mount["name"]]
        if source is None:
            flags.append("--shm-size=64m")
            continue
        flags += ["-v", f"{source}:{mount['mountPath']}{':ro' if mount.get('readOnly') else ''}"]
    values = {}
    for variable in spec.get("env", []):  # a Secret's value (the access key) as the kubelet would put it
        values[variable["name"]] = variable.get("value", ACCESS_KEY)
        flags += ["-e", f"{variable['name']}={values[variable['name']]}"]

    def expanded(word: str) -> str:  # the kubelet's $(VAR) in command and args
        return re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), m.group(0)), word)

    command = [expanded(w) for w in spec.get("command", [])]
    args = [expanded(w) for w in spec.get("args", [])]
    if command:
        flags += ["--entrypoint", command[0]]
        return flags, [*command[1:], *args]
    return flags, args


def _run_to_completion(docker_engine: Engine, image: str, flags: list[str], args: list[str]) -> tuple[int, str]:
    name = unique_name("repogen-i33-init")
    try:
        done = docker_engine("run", "--name", name, *flags, image, *args, check=False, timeout=300)
        return done.returncode, done.stdout + done.stderr
    finally:
        docker_engine("rm", "-f", "-v", name, check=False, timeout=120)


def _key_file(document: Mapping[str, Any], where: Path) -> Path:
    """The ConfigMap's key.pub as the file the kubelet mounts."""
    where.mkdir(exist_ok=True)
    (where / "key.pub").write_text(document["data"]["key.pub"])
    return where


@pytest.mark.parametrize("mounted", [None, "model_repository", "tampered"])
def test_the_deployments_init_container_stops_a_tampered_repository(
    mounted: str | None, context: Path, key: KeyPair, image: str, docker_engine: Engine, tmp_path: Path
) -> None:
    files = _deploy(context / "model_repository", tmp_path / "k8s", "--k8s", "--image", image, "--verify-key",
                    str(key.public))  # fmt: skip
    config_map, deployment, _ = yaml.safe_load_all(files["kubernetes.yaml"])
    pod = deployment["spec"]["template"]["spec"]
    volumes: dict[str, str | None] = {"dshm": None, "verify-key": str(_key_file(config_map, tmp_path / "key"))}
    (init,) = pod["initContainers"]
    flags, args = _flags(init, volumes)
    if mounted:  # a volume of the user's at /models in both containers, as docs/security.md says
        flags += ["-v", f"{context / mounted}:/models:ro"]
    code, log = _run_to_completion(docker_engine, init["image"], flags, args)
    if mounted == "tampered":
        assert code == 1 and _names_the_file(log), log
        return  # a failed init container: the pod's server container never starts
    assert code == 0 and "Verification succeeded" in log, log
    (server,) = pod["containers"]
    flags, args = _flags(server, volumes)
    if mounted:
        flags += ["-v", f"{context / mounted}:/models:ro"]
    with docker_engine.run(server["image"], args, name=unique_name("repogen-i33-pod"), flags=flags) as served:
        served.wait_ready(180)
        _answers(served)


@pytest.mark.parametrize("repository", ["tampered", "model_repository"])
def test_kserve_verifies_the_download_before_the_runtime_starts(
    repository: str, context: Path, key: KeyPair, image: str, standin_image, docker_engine: Engine, tmp_path: Path
) -> None:
    files = _deploy(context / "model_repository", tmp_path / "kserve", "--kserve", "--storage-uri", "s3://b/q",
                    "--verify-key", str(key.public), "--verifier-image", image)  # fmt: skip
    config_map, isvc = yaml.safe_load_all(files["inferenceservice.yaml"])
    predictor = isvc["spec"]["predictor"]
    tools = tmp_path / "emptydir"
    tools.mkdir(mode=0o777)
    tools.chmod(0o1777)  # an emptyDir is world-writable; the containers run as uid 1000
    downloaded = tmp_path / "mnt-models"
    shutil.copytree(context / repository, downloaded)  # what the storage initializer wrote, file by file
    volumes: dict[str, str | None] = {
        "dshm": None, "model-signing": str(tools), "verify-key": str(_key_file(config_map, tmp_path / "key"))
    }  # fmt: skip
    (init,) = predictor["initContainers"]
    code, log = _run_to_completion(docker_engine, init["image"], *_flags(init, volumes))
    assert code == 0, log
    model = predictor["model"]  # KServe appends the model's args (the access flags) to the runtime's
    model = {**model, "args": [*KSERVE_RUNTIME_ARGS, *model.get("args", [])]}
    flags, args = _flags(model, volumes)
    flags += ["-v", f"{downloaded}:/mnt/models:ro", "--user", "1000:1000", "--cap-drop", "ALL"]
    runtime = standin_image("24.10").tag  # the stock runtime image: no verifier of its own
    if repository == "tampered":
        code, log = _run_to_completion(docker_engine, runtime, flags, args)
        assert code == 1 and _names_the_file(log), log
        assert "Started HTTPService" not in log and "successfully loaded" not in log  # tritonserver never ran
        return
    name = unique_name("repogen-i33-kserve")
    with docker_engine.run(runtime, args, name=name, flags=flags, publish={"http": 8080, "grpc": 9000}) as served:
        served.wait_ready(180)
        _answers(served)
        assert "Verification succeeded" in served.logs()
