"""repogen deploy with a model image: KServe's modelcar (--storage-uri oci://) and a Kubernetes image volume
(--models-image), pinned by digest, locked APIs and liveness probe kept, checked against KServe's CRD schema and
kubernetes-validate. tests/containers/test_modelcar.py runs both forms on a Docker engine."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_deploy_lint import KSERVE_SCHEMA, _strict, _tool

from repogen.build import build_app
from repogen.signing import SignWith
from repogen.testing.signing import ec_key

ROOT = Path(__file__).resolve().parents[3]
DIGEST = "sha256:" + "ab" * 32
REFERENCE = f"registry.example.com/models/quickstart:1@{DIGEST}"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oci") / "model_repository"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), out)
    return out


def deploy(repo: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "repogen", "deploy", str(repo), *args], cwd=ROOT,
                            capture_output=True, text=True)  # fmt: skip
    assert (result.returncode == 0) is ok, result.stderr
    return result


def test_the_modelcar_inference_service_waits_for_the_link_and_keeps_the_locks(repo: Path) -> None:
    text = deploy(repo, "--kserve", "--storage-uri", f"oci://{REFERENCE}").stdout
    isvc = yaml.safe_load(text)
    validator = __import__("jsonschema").Draft7Validator(
        _strict(json.loads(gzip.decompress(KSERVE_SCHEMA.read_bytes())))
    )
    assert [e.message for e in validator.iter_errors(isvc)] == []
    model = isvc["spec"]["predictor"]["model"]
    assert model["storageUri"] == f"oci://{REFERENCE}" and model["modelFormat"] == {"name": "triton"}
    assert model["command"] == ["/opt/nvidia/nvidia_entrypoint.sh", "/bin/sh", "-c",
                                'until [ -e /mnt/models/ ]; do sleep 0.2; done; exec "$0" "$@"']  # fmt: skip
    assert "livenessProbe" in model and any(a.startswith("--http-restricted-api=") for a in model["args"])
    assert f"# Push: repogen push model_repository {REFERENCE.split('@')[0]}" in text
    assert "enableModelcar: true" in text and "uidModelcar" in text


def test_with_a_verify_key_the_server_waits_then_verifies(repo: Path, tmp_path: Path) -> None:
    key = ec_key(tmp_path)
    signed = tmp_path / "signed"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), signed, sign=SignWith(key=key.private))
    text = deploy(signed, "--kserve", "--storage-uri", f"oci://{REFERENCE}", "--verify-key", str(key.public)).stdout
    script = [d for d in yaml.safe_load_all(text) if d["kind"] == "InferenceService"][0]["spec"]["predictor"]["model"][
        "command"
    ][-1]
    assert script.startswith("until [ -e /mnt/models/ ]; do sleep 0.2; done; ") and "model_signing verify" in script
    assert 'verify key "$(readlink /mnt/models)"' in script  # one step: -f would follow /proc/PID/root to "/"
    assert script.endswith('&& exec "$0" "$@"')


@pytest.mark.parametrize("version", ["1.33.0", "1.37.0"])
def test_the_image_volume_deployment_validates_from_1_33(repo: Path, tmp_path: Path, version: str) -> None:
    deploy(repo, "--k8s", "--models-image", REFERENCE, "-o", str(tmp_path))
    manifest = tmp_path / "kubernetes.yaml"
    cmd = [_tool("kubernetes-validate"), "--strict", "--kubernetes-version", version, str(manifest)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    deployment = next(yaml.safe_load_all(manifest.read_text()))
    pod = deployment["spec"]["template"]["spec"]
    server = pod["containers"][0]
    assert server["image"].startswith("nvcr.io/nvidia/tritonserver:") and "--model-repository=/models" in server["args"]
    assert {"name": "models-image", "mountPath": "/models", "subPath": "models", "readOnly": True} in server[
        "volumeMounts"
    ]
    assert {"name": "models-image", "image": {"reference": REFERENCE, "pullPolicy": "IfNotPresent"}} in pod["volumes"]
    assert "livenessProbe" in server and any(a.startswith("--http-restricted-api=") for a in server["args"])


def test_an_older_cluster_has_no_image_volumes(repo: Path, tmp_path: Path) -> None:
    deploy(repo, "--k8s", "--models-image", REFERENCE, "-o", str(tmp_path))
    cmd = [
        _tool("kubernetes-validate"),
        "--strict",
        "--kubernetes-version",
        "1.30.0",
        str(tmp_path / "kubernetes.yaml"),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode != 0 and "'image' was unexpected" in result.stdout + result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--kserve", "--storage-uri", "oci://registry.example.com/q:1"],
        ["--k8s", "--models-image", "registry.example.com/q:1"],
    ],
)
def test_a_reference_without_its_digest_is_refused(repo: Path, args: list[str]) -> None:
    result = deploy(repo, *args, ok=False)
    assert "is not pinned by digest; expected REGISTRY/NAME:TAG@sha256:<64 hex>" in result.stderr
    assert "repogen push" in result.stderr
