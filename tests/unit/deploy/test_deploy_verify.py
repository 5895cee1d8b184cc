"""repogen deploy --verify-key: each deployment file checks the signatures before tritonserver reads the repository.

Structure only (what runs where, with which key); tests/containers/test_signed_containers.py runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repogen.build import build_app
from repogen.deploy import DeployError, DeployOptions, generate
from repogen.deploy.files import DOCKERFILE, K8S_FILE, KSERVE_FILE, VERIFY_KEY_FILE
from repogen.signing import SignWith
from repogen.testing.signing import KeyPair, ec_key

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = "examples/quickstart/app.py:models"
VERIFY = (
    'PYTHONPATH=/opt/model-signing python3 -m model_signing verify key "$(readlink -f {0})" '
    "--signature {0}/model.sig --public_key /etc/repogen/verify-key/key.pub"
)


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return ec_key(tmp_path_factory.mktemp("key"))


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, key: KeyPair) -> Path:
    out = tmp_path_factory.mktemp("signed") / "model_repository"
    build_app(str(ROOT / QUICKSTART), out, sign=SignWith(key=key.private))
    return out


def _generate(repo: Path, **options: object):  # type: ignore[no-untyped-def]
    return generate(repo, DeployOptions(**options))  # type: ignore[arg-type]


def test_the_image_is_made_of_verified_files_only(signed: Path, key: KeyPair) -> None:
    out = _generate(
        signed, docker=True, verify_key=key.public, context=signed.parent, output_dir=signed.parent / "deploy"
    )
    assert out.files[VERIFY_KEY_FILE] == key.public.read_text()
    lines = out.files[DOCKERFILE].splitlines()
    assert [line for line in lines if line.startswith("FROM")] == [
        "FROM ${TRITON_IMAGE} AS verify",
        "FROM ${TRITON_IMAGE}",
    ]
    verify, final = out.files[DOCKERFILE].split("\nFROM ${TRITON_IMAGE}\n")
    assert "RUN python3 -m pip install --no-cache-dir --target /opt/model-signing model-signing==1.1.1" in verify
    assert "COPY deploy/verify-key.pub /etc/repogen/verify-key/key.pub" in verify
    assert "COPY model_repository /models" in verify and f"RUN {VERIFY.format('/models')}" in verify
    assert "COPY --from=verify /models /models" in final and "COPY model_repository" not in final
    assert "PYTHONPATH" not in final.replace(VERIFY.format("/models"), "")  # the server's Python stays numpy-only


def test_a_deployment_verifies_in_an_init_container_with_the_key_from_a_config_map(signed: Path, key: KeyPair) -> None:
    config_map, deployment, _ = yaml.safe_load_all(_generate(signed, k8s=True, verify_key=key.public).files[K8S_FILE])
    assert config_map["kind"] == "ConfigMap" and config_map["data"] == {"key.pub": key.public.read_text()}
    pod = deployment["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["image"] == pod["containers"][0]["image"] == "model-repository:latest"
    assert init["command"] == ["/bin/sh", "-c", VERIFY.format("/models")]
    assert init["securityContext"] == pod["containers"][0]["securityContext"]
    assert {"name": "verify-key", "configMap": {"name": f"{config_map['metadata']['name']}"}} in pod["volumes"]
    secret = list(yaml.safe_load_all(_generate(signed, k8s=True, verify_key_secret="signing-key").files[K8S_FILE]))
    assert [d["kind"] for d in secret] == ["Deployment", "Service"]
    volumes = secret[0]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "verify-key", "secret": {"secretName": "signing-key"}} in volumes


def test_kserve_verifies_a_download_in_the_model_container_before_the_runtime_command(
    signed: Path, key: KeyPair
) -> None:
    out = _generate(signed, kserve=True, storage_uri="s3://b/q", verify_key=key.public, verifier_image="v:1")
    _, isvc = yaml.safe_load_all(out.files[KSERVE_FILE])
    predictor = isvc["spec"]["predictor"]
    (tools,) = predictor["initContainers"]  # KServe's storage initializer runs after these: it only copies tools
    assert tools["image"] == "v:1" and tools["command"][-1] == "cp -R /opt/model-signing/. /tools/"
    command = predictor["model"]["command"]
    assert command[:3] == ["/opt/nvidia/nvidia_entrypoint.sh", "/bin/sh", "-c"]
    assert command[3] == VERIFY.format("/mnt/models") + ' && exec "$0" "$@"'  # then the runtime's own args
    mounts = {m["mountPath"] for m in predictor["model"]["volumeMounts"]}
    assert {"/opt/model-signing", "/etc/repogen/verify-key", "/dev/shm"} == mounts
    baked = _generate(signed, kserve=True, image="r/q:1", verify_key=key.public).files[KSERVE_FILE]
    (init,) = list(yaml.safe_load_all(baked))[1]["spec"]["predictor"]["initContainers"]
    assert init["image"] == "r/q:1" and init["command"][-1] == VERIFY.format("/models")


def test_what_cannot_verify_is_refused_with_nothing_written(signed: Path, key: KeyPair, tmp_path: Path) -> None:
    unsigned = tmp_path / "unsigned"
    build_app(str(ROOT / QUICKSTART), unsigned)
    with pytest.raises(DeployError, match=r"is not signed \(no model.sig\).*repogen sign"):
        _generate(unsigned, k8s=True, verify_key=key.public)
    with pytest.raises(DeployError, match="is not a PEM public key"):
        _generate(signed, k8s=True, verify_key=key.private)
    with pytest.raises(DeployError, match="expected -o DIR"):
        _generate(signed, docker=True, verify_key=key.public, context=signed.parent)
    with pytest.raises(DeployError, match="--app .* rebuilds an unsigned one"):
        _generate(signed, docker=True, verify_key=key.public, app=QUICKSTART, context=ROOT, output_dir=ROOT / "d")
    with pytest.raises(DeployError, match="expected one"):
        _generate(signed, k8s=True, verify_key=key.public, verify_key_secret="s")
    with pytest.raises(DeployError, match="only a cluster can mount"):
        _generate(signed, docker=True, verify_key_secret="s", context=signed.parent, output_dir=signed.parent / "d")
