"""A repository as an OCI image, pushed to a real registry, pulled by Docker and served as a cluster serves it.

A real registry (Debian's docker-registry) runs on 127.0.0.1; `repogen push` sends the quickstart and the
packages app (scikit-learn, onnxruntime, PyYAML shipped) to it, and Docker pulls them by digest. Then, as
KServe's webhook builds a modelcar pod: the model image runs KServe's modelcar command, the NGC stand-in runs
KServe's Triton runtime command line in the same PID namespace (``--pid container:``, as
``shareProcessNamespace: true``), both as uid 1010 (``uidModelcar``, no passwd entry in either image), an
emptyDir-like host directory (mode 0777, as the kubelet makes one) on ``/mnt`` in both, every capability dropped;
tritonserver reads ``/mnt/models``, a link into the model container's root, and answers over HTTP and gRPC as
the builder computed. The image-volume form: a volume filled from the pulled image's ``/models`` mounted
read-only. A blob altered in the registry is refused at pull, and one repository imaged under umask 022 and 077
by two Pythons gives one digest. Everything started here (registry, containers, images, volumes) is removed
afterwards, also on failure.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml
from runs import ACCESS_KEY, PACKAGES_INPUTS, PREFIX, ROOT, assert_same, image_name, shm_flag

from repogen.deploy.oci_image import MODELCAR_COMMAND
from repogen.server.running.docker import Container, Engine, removing, unique_name
from repogen.testing.builders import ensure_builder_venv
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.registry import LocalRegistry, local_registry
from repogen.triton.releases import NEWEST

UID_MODELCAR = 1010
"""KServe's Helm default for ``uidModelcar``: the webhook runs the modelcar and the server container as this uid."""
RUNTIME_ARGS = ["tritonserver", "--model-store=/mnt/models", "--grpc-port=9000", "--http-port=8080",
                "--allow-grpc=true", "--allow-http=true"]  # fmt: skip
"""KServe's kserve-tritonserver ServingRuntime's command line."""
LOCKED = ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
QUICKSTART_INPUTS = {
    "AddSub": {"a": np.array([[1.0, 2.0]], np.float32), "b": np.array([[3.0, 4.5]], np.float32)},
    "Shout": {"text": np.array([[b"modelcar"]], dtype=object)},
}
QUICKSTART_EXPECTED = {
    "AddSub": {"add": np.array([[4.0, 6.5]], np.float32), "sub": np.array([[-2.0, -2.5]], np.float32)},
    "Shout": {"loud": np.array([[b"MODELCAR!"]], dtype=object), "length": np.array([[8]], np.int64)},
}


def repogen(*args: str, python: str = sys.executable, umask: int = 0o022) -> str:
    proc = subprocess.run([python, "-m", "repogen", *args], cwd=ROOT, capture_output=True, text=True, umask=umask)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@dataclass(frozen=True)
class Pushed:
    repository: Path
    reference: str
    """REGISTRY/NAME:TAG@sha256:..., as `repogen push` printed it."""

    @property
    def digest(self) -> str:
        return self.reference.rsplit("@", 1)[1]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    with local_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="module")
def pushed(registry, built, packages_app, docker_engine: Engine) -> Iterator[dict[str, Pushed]]:
    """Both apps pushed with `repogen push --insecure` and pulled by digest with `docker pull`."""
    apps = {"quickstart": built("examples/quickstart/app.py:models"), "packages": packages_app()}
    found = {}
    for name, repository in apps.items():
        target = f"{registry.host}/{PREFIX}-{name}:{image_name('x').rsplit(':', 1)[1]}"
        printed = repogen("push", str(repository), target, "--insecure").strip()
        assert printed.startswith(f"{target}@sha256:")
        found[name] = Pushed(repository, printed)
    references = [p.reference for p in found.values()]
    with removing(docker_engine, "image", *references):
        for reference in references:
            docker_engine("pull", reference, timeout=600)
        yield found


def test_the_pulled_image_is_what_was_pushed(pushed, docker_engine):
    for each in pushed.values():
        image = docker_engine.inspect("image", each.reference)
        assert image is not None and each.reference.replace(each.reference.split("@")[0], "") in str(
            image["RepoDigests"]
        )
        config = image["Config"]
        assert config["Cmd"] == list(MODELCAR_COMMAND) and not config.get("Entrypoint")
        assert config["Labels"]["org.containers.type"] == "ai.image.model.car"


def inference_service_model(app: Pushed) -> dict:
    """The predictor's model of `repogen deploy --kserve --storage-uri oci://<what repogen push printed>`."""
    text = repogen("deploy", str(app.repository), "--kserve", "--storage-uri", f"oci://{app.reference}")
    (isvc,) = [d for d in yaml.safe_load_all(text) if d["kind"] == "InferenceService"]
    return isvc["spec"]["predictor"]["model"]


def server_flags(model: dict) -> tuple[list[str], list[str]]:
    """The runtime container as KServe merges it: the model's command, the runtime's args then the model's, its env
    (the access key from its Secret) with the kubelet's ``$(VAR)`` expanded."""
    env = {e["name"]: ACCESS_KEY for e in model.get("env", [])}
    words = [*model["command"], *RUNTIME_ARGS, *model.get("args", [])]
    words = [re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), w) for w in words]
    return ["--entrypoint", words[0], *(f"-e{k}={v}" for k, v in env.items())], words[1:]


@pytest.fixture(scope="module", params=["quickstart", "packages"])
def served(request, pushed, standin_image, docker_engine, tmp_path_factory) -> Iterator[tuple[str, Container]]:
    """The pod KServe's webhook makes, container by container in its order: the pod's PID namespace (a container of
    the model image sleeping stands in for the pause container), the server (with the InferenceService's command,
    which waits for /mnt/models), then the modelcar, which makes the link."""
    app, engine = pushed[request.param], docker_engine
    mnt = tmp_path_factory.mktemp(f"mnt-{request.param}")
    mnt.chmod(0o777)  # an emptyDir: the kubelet makes it world-writable
    user, name = ["--user", str(UID_MODELCAR)], f"{PREFIX}-modelcar-{request.param}"
    shared = [*user, *LOCKED, "-v", f"{mnt}:/mnt"]
    containers = [engine.run(app.reference, ["sh", "-c", "sleep infinity"], name=unique_name(f"{name}-pause"),
                             publish={}, flags=[*user, *LOCKED])]  # fmt: skip
    try:
        pid = ["--pid", f"container:{containers[0].name}"]
        flags, args = server_flags(inference_service_model(app))
        server = engine.run(standin_image(NEWEST.ngc).tag, args, name=unique_name(f"{name}-server"),
                            publish={"http": 8080, "grpc": 9000},
                            flags=[*shared, *pid, *flags, shm_flag(app.repository),
                                   "-e", "MODEL_INIT_MODE=async"])  # fmt: skip
        containers.append(server)
        time.sleep(3)
        assert server.running() and "Started HTTPService" not in server.logs()  # waiting for the link, not failed
        start = time.monotonic()
        containers.append(engine.run(app.reference, list(MODELCAR_COMMAND), name=unique_name(name), publish={},
                                     flags=[*shared, *pid]))  # fmt: skip
        server.wait_ready(300)
        print(f"{request.param}: ready {time.monotonic() - start:.1f} s after the modelcar started")
        yield request.param, server
    finally:
        for container in reversed(containers):
            container.remove()


def expected_of(app: str, packages_expected: dict[str, np.ndarray]) -> dict[str, tuple[dict, dict]]:
    if app == "quickstart":
        return {m: (QUICKSTART_INPUTS[m], QUICKSTART_EXPECTED[m]) for m in QUICKSTART_INPUTS}
    return {m: (inputs, {k[len(m) + 1 :]: v for k, v in packages_expected.items() if k.startswith(f"{m}.")})
            for m, inputs in PACKAGES_INPUTS.items()}  # fmt: skip


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_modelcar_pod_serves_as_the_builder_computed(served, packages_expected, protocol):
    app, server = served
    for model, (inputs, expected) in expected_of(app, packages_expected).items():
        assert_same(infer(protocol, server, model, inputs), expected, f"{app} {model}")


def test_the_server_runs_as_the_modelcar_uid_without_a_passwd_entry(served, docker_engine):
    _, server = served
    assert server.exec("id", "-u").stdout.strip() == str(UID_MODELCAR)
    assert docker_engine("exec", server.name, "getent", "passwd", str(UID_MODELCAR), check=False).returncode != 0
    link = server.exec("readlink", "/mnt/models").stdout.strip()
    assert link.startswith("/proc/") and link.endswith("/root/models")  # a link, nothing copied


def test_the_image_volume_form_serves_read_only(pushed, standin_image, docker_engine):
    """Kubernetes' ``volumes[].image`` (subPath ``models``) as Docker 20.10 can: a volume filled from the image."""
    app = pushed["quickstart"]
    volume = f"{PREFIX}-models-{os.urandom(4).hex()}"
    with removing(docker_engine, "volume", volume):
        docker_engine("volume", "create", volume)
        docker_engine("run", "--rm", "-v", f"{volume}:/models", app.reference, "sh", "-c", "true", timeout=300)
        args = ["tritonserver", "--model-repository=/models"]
        with docker_engine.run(standin_image(NEWEST.ngc).tag, args, name=unique_name(f"{PREFIX}-image-volume"),
                               flags=[*LOCKED, "--user", "1000", "-v", f"{volume}:/models:ro",
                                      shm_flag(app.repository)]) as server:  # fmt: skip
            server.wait_ready(300)
            for protocol in PROTOCOLS:
                for model, (inputs, expected) in expected_of("quickstart", {}).items():
                    assert_same(infer(protocol, server, model, inputs), expected, f"image volume {model}")
            assert docker_engine("exec", server.name, "touch", "/models/x", check=False).returncode != 0


def test_a_blob_altered_in_the_registry_is_refused_at_pull(built, docker_engine, tmp_path):
    """Its own registry, and an image with a title of its own, so that its config is nowhere on the engine (its layers
    are: Docker would reuse them unread); one byte of the config blob changed in the registry's storage."""
    repository = built("examples/quickstart/app.py:models")
    with local_registry(tmp_path) as registry:
        target = f"{registry.host}/{PREFIX}-altered:1"
        reference = repogen("push", str(repository), target, "--insecure", "--title", f"altered {tmp_path.name}")
        layout = tmp_path / "image.oci.tar"
        repogen("image", str(repository), "-o", str(layout), "--title", f"altered {tmp_path.name}")
        config_digest = _config_digest(layout)
        blob = registry.blob_file(config_digest)
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0x01
        blob.write_bytes(bytes(data))
        with removing(docker_engine, "image", reference.strip()):
            pulled = docker_engine("pull", reference.strip(), check=False, timeout=300)
        assert pulled.returncode != 0, pulled.stdout
        assert "digest" in (pulled.stdout + pulled.stderr).lower() or "verif" in pulled.stderr.lower(), pulled.stderr


def _config_digest(layout: Path) -> str:
    import json
    import tarfile

    with tarfile.open(layout) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest = json.load(tar.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'][7:]}"))  # type: ignore[arg-type]
    return str(manifest["config"]["digest"])


def test_one_repository_one_digest_from_two_pythons_and_two_umasks(pushed, repogen_cache_dir, tmp_path):
    app = pushed["quickstart"]
    digests = set()
    for version, mask in (("3.10", 0o022), ("3.13", 0o077)):
        python = str(ensure_builder_venv(version, repogen_cache_dir) / "bin" / "python")
        output = tmp_path / f"py{version}.oci.tar"
        printed = repogen("image", str(app.repository), "-o", str(output), python=python, umask=mask)
        digests.add(printed.split(": ", 1)[1].split(" ", 1)[0])
    assert digests == {app.digest}
    assert (tmp_path / "py3.10.oci.tar").read_bytes() == (tmp_path / "py3.13.oci.tar").read_bytes()


def test_credentials_come_from_docker_config_or_the_command_line(built, tmp_path):
    """A registry that demands a login (HTTP Basic, as distribution's htpasswd): refused without one, naming the fix;
    pushed with config.json's ``auths`` (what `docker login` writes) and with --username/--password-stdin."""
    repository = str(built("examples/quickstart/app.py:models"))
    with local_registry(tmp_path, login=("alice", "s3cret")) as registry:
        target = f"{registry.host}/{PREFIX}-login:1"
        empty = tmp_path / "empty"
        empty.mkdir()
        refused = subprocess.run([sys.executable, "-m", "repogen", "push", repository, target, "--insecure",
                                  "--docker-config", str(empty)], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
        assert refused.returncode == 1
        assert f"registry {registry.host} asks for a login" in refused.stderr and "docker login" in refused.stderr
        config = tmp_path / "docker"
        config.mkdir()
        auth = base64.b64encode(b"alice:s3cret").decode()
        (config / "config.json").write_text(json.dumps({"auths": {registry.host: {"auth": auth}}}))
        pushed = repogen("push", repository, target, "--insecure", "--docker-config", str(config)).strip()
        assert pushed.startswith(f"{target}@sha256:")
        wrong = subprocess.run([sys.executable, "-m", "repogen", "push", repository, target, "--insecure", "--username",
                                "alice", "--password-stdin"], input="wrong\n", cwd=ROOT, capture_output=True,
                               text=True)  # fmt: skip
        assert wrong.returncode == 1 and "unauthorised (HTTP 401)" in wrong.stderr
        again = subprocess.run([sys.executable, "-m", "repogen", "push", repository, target, "--insecure", "--username",
                                "alice", "--password-stdin"], input="s3cret\n", cwd=ROOT, capture_output=True,
                               text=True)  # fmt: skip
        assert again.returncode == 0 and again.stdout.strip() == pushed
