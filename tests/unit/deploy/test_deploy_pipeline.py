"""Deployment files for the pipeline example (ensemble + BLS models), checked structurally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repogen.build import build_app
from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import DOCKERFILE, K8S_FILE, KSERVE_FILE
from repogen.triton.releases import NEWEST

ROOT = Path(__file__).resolve().parents[3]
APP = "examples/pipeline/app.py:models"
PYTHON_MODELS = 9  # every model but the ensemble runs Python instances


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pipeline") / "model_repository"
    build_app(str(ROOT / APP), out)
    return out


def test_dockerfile_builds_the_pipeline_inside_the_image(repo: Path) -> None:
    options = DeployOptions(docker=True, app=APP, context=ROOT, output_dir=ROOT / "deploy")
    text = generate(repo, options).files[DOCKERFILE]
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("ARG TRITON_IMAGE")] == [
        f"ARG TRITON_IMAGE={NEWEST.image}"  # the newest release repogen knows, by default
    ]
    assert "RUN repogen build /src/examples/pipeline/app.py:models -o /models" in lines
    assert (
        lines[-1].startswith('CMD ["/bin/sh", "-c", ') and "exec tritonserver --model-repository=/models" in lines[-1]
    )
    assert f"/dev/shm: 192Mi for {PYTHON_MODELS} Python model instance(s), 16Mi each" in text


def test_kubernetes_probes_ports_and_shm_for_every_python_instance(repo: Path) -> None:
    documents = list(yaml.safe_load_all(generate(repo, DeployOptions(k8s=True, image="reg/pipe:1")).files[K8S_FILE]))
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "reg/pipe:1"
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": 8000}
    probes = {p["model"]: p["path"] for p in json.loads(container["livenessProbe"]["exec"]["command"][4])}
    assert probes["Spell"] == "/v2/models/Spell/generate_stream" and probes["Pipeline"] == "/v2/models/Pipeline/infer"
    assert [p["containerPort"] for p in container["ports"]] == [8000, 8001, 8002]
    (shm,) = [v for v in pod["volumes"] if v.get("emptyDir", {}).get("medium") == "Memory"]
    size_mib = int(shm["emptyDir"]["sizeLimit"].removesuffix("Mi"))
    assert size_mib == 192  # 9 x 16 MiB = 144 MiB, +25% = 180 MiB, in 16 MiB steps
    assert {"mountPath": "/dev/shm", "name": shm["name"]} in container["volumeMounts"]
    assert any(d["kind"] == "Service" for d in documents)


def test_kserve_uses_the_triton_runtime(repo: Path) -> None:
    (service,) = yaml.safe_load_all(
        generate(repo, DeployOptions(kserve=True, storage_uri="s3://models/pipe")).files[KSERVE_FILE]
    )
    assert service["apiVersion"] == "serving.kserve.io/v1beta1" and service["kind"] == "InferenceService"
    model = service["spec"]["predictor"]["model"]
    assert model["modelFormat"] == {"name": "triton"} and model["storageUri"] == "s3://models/pipe"
