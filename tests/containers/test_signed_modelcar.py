"""A signed repository served from a model image: its signatures are checked in the pod before tritonserver starts.

The signed quickstart is pushed with ``repogen push --verify-key`` to a real registry; a second image is made from
a copy with one payload byte changed (by the library's image writer, which does no checks, as an attacker's tool
would; ``repogen push`` refuses that copy) and pushed beside it. The InferenceService of ``repogen deploy --kserve
--storage-uri oci://... --verify-key`` runs as KServe's webhook makes the pod (the verifier copied out of the image
``repogen deploy --docker --verify-key`` builds, the pause container's PID namespace, the server then the modelcar,
uid 1010, the key from the ConfigMap): the signed image serves over HTTP and gRPC, the changed one stops the
server container before tritonserver starts, naming the file. The image is then pulled by digest, so the registry
cannot swap it: only a new digest, which the InferenceService does not name, could carry another repository.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from runs import ACCESS_KEY, PREFIX, ROOT

from repogen.deploy.images import ImageOptions, check_repository
from repogen.deploy.oci_image import MODELCAR_COMMAND, image_layout
from repogen.deploy.oci_shell import find_shell
from repogen.deploy.registry import PushOptions, push_image
from repogen.errors import DeployError, VerificationError
from repogen.server.running.docker import Engine, removing, unique_name
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.registry import local_registry
from repogen.testing.signing import KeyPair, copy_repository, ec_key

UID_MODELCAR = 1010
RELEASE = "24.10"
"""The verifier is installed for the image's Python: the verifier image and the runtime share the 24.10 stand-in."""
RUNTIME_ARGS = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
                "--allow-grpc=true", "--allow-http=true"]  # fmt: skip
LOCKED = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]


def repogen(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "repogen", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return ec_key(tmp_path_factory.mktemp("key"), "signer")


@pytest.fixture(scope="module")
def images(built, key, docker_engine: Engine, tmp_path_factory, damaged_on_purpose) -> Iterator[dict[str, str]]:
    """{"signed": ref@digest, "changed": ref@digest} in a registry of this module, the verifier's build context and
    the signed repository (which `repogen deploy --verify-key` reads)."""
    signed = built("examples/quickstart/app.py:models", "--sign-key", str(key.private))
    work = tmp_path_factory.mktemp("signed-modelcar")
    changed = copy_repository(signed, damaged_on_purpose(work / "changed"))
    payload = changed / "AddSub" / "1" / "model.pkl"
    data = bytearray(payload.read_bytes())
    data[len(data) // 2] ^= 0x01
    payload.write_bytes(bytes(data))
    with local_registry(work) as registry:
        found = {"signed": repogen("push", str(signed), f"{registry.host}/{PREFIX}-signed:1", "--insecure",
                                   "--verify-key", str(key.public)).strip()}  # fmt: skip
        with pytest.raises((VerificationError, DeployError)):  # `repogen push` refuses the changed copy
            check_repository(changed, key.public)
        image = image_layout(changed, work / "layout", find_shell())
        found["changed"] = push_image(image, f"{registry.host}/{PREFIX}-signed:changed",
                                      PushOptions(ImageOptions(), insecure=True)).line()  # fmt: skip
        context = work / "context"
        copy_repository(signed, context / "model_repository")
        repogen("deploy", str(context / "model_repository"), "--docker", "--verify-key", str(key.public),
                "--triton-release", RELEASE, "--context", str(context), "-o", str(context / "deploy"))  # fmt: skip
        yield found | {"context": str(context), "repository": str(signed)}


@pytest.fixture(scope="module")
def verifier(images, standin_image, docker_engine: Engine) -> Iterator[str]:
    tag = unique_name(f"{PREFIX}-verifier") + ":1"
    context = Path(images["context"])
    with removing(docker_engine, "image", tag, tag.replace(":1", ":verify")):
        builder = docker_engine.with_env(DOCKER_BUILDKIT="0")  # BuildKit would pull its frontend
        for target, name in (("verify", tag.replace(":1", ":verify")), (None, tag)):
            builder("build", "--force-rm", "-f", str(context / "deploy" / "Dockerfile"), "-t", name,
                    *(["--target", target] if target else []), "--build-arg",
                    f"TRITON_IMAGE={standin_image(RELEASE).tag}", str(context), timeout=900)  # fmt: skip
        yield tag


def expand(words: list[str], env: dict[str, str]) -> list[str]:
    return [re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), w) for w in words]


@pytest.mark.parametrize("which", ["signed", "changed"])
def test_the_pod_verifies_the_model_image_before_tritonserver_starts(
    which, images, verifier, key, standin_image, docker_engine: Engine, tmp_path
):
    reference = images[which]
    text = repogen("deploy", images["repository"], "--kserve", "--storage-uri", f"oci://{reference}", "--verify-key",
                   str(key.public), "--verifier-image", verifier, "--triton-release", RELEASE)  # fmt: skip
    config_map, isvc = yaml.safe_load_all(text)
    predictor, engine = isvc["spec"]["predictor"], docker_engine
    (keys := tmp_path / "key").mkdir()
    (keys / "key.pub").write_text(config_map["data"]["key.pub"])
    mnt, tools = tmp_path / "mnt", tmp_path / "tools"
    for folder in (mnt, tools):
        folder.mkdir()
        folder.chmod(0o777)  # emptyDirs
    user = ["--user", str(UID_MODELCAR)]
    (init,) = predictor["initContainers"]
    copied = engine("run", "--rm", *user, *LOCKED, "-v", f"{tools}:/tools", "--entrypoint", init["command"][0],
                    init["image"], *init["command"][1:], check=False, timeout=300)  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    model = predictor["model"]
    env = {e["name"]: ACCESS_KEY for e in model.get("env", [])}
    words = expand([*model["command"], *RUNTIME_ARGS, *model.get("args", [])], env)
    mounts = ["-v", f"{mnt}:/mnt", "-v", f"{tools}:/opt/model-signing:ro", "-v", f"{keys}:/etc/repogen/verify-key:ro"]
    name = unique_name(f"{PREFIX}-signed-modelcar-{which}")
    containers = []
    with removing(docker_engine, "image", reference):
        docker_engine("pull", reference, timeout=300)
        try:
            containers.append(engine.run(reference, ["sh", "-c", "sleep infinity"], name=f"{name}-pause", publish={},
                                         flags=[*user, *LOCKED]))  # fmt: skip
            pid = ["--pid", f"container:{containers[0].name}"]
            server = engine.run(standin_image(RELEASE).tag, words[1:], name=f"{name}-server",
                                publish={"http": 8080, "grpc": 9000},
                                flags=[*user, *LOCKED, *pid, *mounts, "--entrypoint", words[0], "--shm-size=64m",
                                       *(f"-e{k}={v}" for k, v in env.items())])  # fmt: skip
            containers.append(server)
            containers.append(engine.run(reference, list(MODELCAR_COMMAND), name=name, publish={},
                                         flags=[*user, *LOCKED, *pid, "-v", f"{mnt}:/mnt"]))  # fmt: skip
            if which == "changed":
                deadline = time.monotonic() + 180
                while server.running() and time.monotonic() < deadline:
                    time.sleep(0.5)
                log = server.logs()
                assert not server.running() and server.inspect()["State"]["ExitCode"] == 1, log
                assert "AddSub/1/model.pkl" in log and "Started HTTPService" not in log, log
                return
            server.wait_ready(300)
            assert "Verification succeeded" in server.logs()
            a, b = np.array([[1.0, 2.0]], dtype=np.float32), np.array([[3.0, 5.0]], dtype=np.float32)
            for protocol in PROTOCOLS:
                assert infer(protocol, server, "AddSub", {"a": a, "b": b})["add"].tolist() == [[4.0, 7.0]]
        finally:
            for container in reversed(containers):
                container.remove()
