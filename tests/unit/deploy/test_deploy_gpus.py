"""Deploying a repository with KIND_GPU models asks each platform for GPUs its own way, and sizes Triton's CUDA
memory pool where the models' tensors outgrow the 64 MB default; the files pass the same linters as the CPU ones."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_deploy_lint import KSERVE_SCHEMA, _strict, _tool

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.deploy.files import DeployOptions, generate

# 64 rows x (1024 x 1024 in + 1024 x 1024 out) float32 = 512 MiB a batch: twice that (a batch in flight while the
# next is read) is 1 GiB of pool on each of the two GPUs the model names
BIG = [Tensor(name="x", dtype=np.float32, shape=(1024, 1024))]
POOL = ["--cuda-memory-pool-byte-size=0:1073741824", "--cuda-memory-pool-byte-size=1:1073741824"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    models = Repository()
    gpus = [InstanceGroup(kind="KIND_GPU", gpus=[0, 1])]
    models.bind("Big", batch(lambda x: {"y": x}), inputs=BIG, outputs=[Tensor(name="y", dtype=np.float32,
                shape=(1024, 1024))], config=ModelConfig(max_batch_size=64, instance_groups=gpus))  # fmt: skip
    small = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
    models.bind("Cpu", batch(lambda x: {"y": x}), inputs=small, outputs=[Tensor(name="y", dtype=np.float32,
                shape=(-1,))])  # fmt: skip
    out = tmp_path_factory.mktemp("gpus") / "model_repository"
    build_repository(models, out)
    return out


@pytest.fixture(scope="module")
def files(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("deploy")
    options = DeployOptions(docker=True, k8s=True, kserve=True, compose=True, context=repo.parent, output_dir=out,
                            storage_uri="s3://bucket/models")  # fmt: skip
    written = generate(repo, options).files
    for name, text in written.items():
        (out / name).write_text(text)
    return {name: str(out / name) for name in written}


def test_docker_runs_with_the_gpus_and_the_pool(files: dict[str, str]) -> None:
    text = Path(files["Dockerfile"]).read_text()
    (run,) = [line for line in text.splitlines() if line.startswith("#   docker run ")]
    assert run.startswith("#   docker run --rm --shm-size=64m --gpus all -e REPOGEN_ACCESS_TOKEN -p8000:8000 ")
    (cmd,) = [line for line in text.splitlines() if line.startswith("CMD ")]
    assert f"exec tritonserver --model-repository=/models {' '.join(POOL)} " in json.loads(cmd.removeprefix("CMD "))[-1]
    result = subprocess.run([_tool("hadolint"), "--no-color", files["Dockerfile"]], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_reserves_the_gpus(files: dict[str, str]) -> None:
    service = next(iter(yaml.safe_load(Path(files["compose.yaml"]).read_text())["services"].values()))
    assert service["deploy"] == {
        "resources": {"reservations": {"devices": [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]}}
    }
    assert f"exec tritonserver --model-repository=/models {' '.join(POOL)} " in service["command"][-1]
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.fail("docker-compose is not installed: apt-get install docker-compose (.ci/run installs it)")
    result = subprocess.run([compose, "-f", files["compose.yaml"], "config", "-q"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_kubernetes_and_kserve_ask_for_nvidia_gpus(files: dict[str, str]) -> None:
    deployment = next(
        d for d in yaml.safe_load_all(Path(files["kubernetes.yaml"]).read_text()) if d["kind"] == "Deployment"
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert container["args"][:2] == ["tritonserver", "--model-repository=/models"] and container["args"][-2:] == POOL
    cmd = [_tool("kubernetes-validate"), "--strict", "--kubernetes-version", "1.37.0", files["kubernetes.yaml"]]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    (isvc,) = yaml.safe_load_all(Path(files["inferenceservice.yaml"]).read_text())
    model = isvc["spec"]["predictor"]["model"]
    assert model["resources"]["limits"]["nvidia.com/gpu"] == 1 and model["args"][-2:] == POOL
    import jsonschema

    validator = jsonschema.Draft7Validator(_strict(json.loads(gzip.decompress(KSERVE_SCHEMA.read_bytes()))))
    assert [e.message for e in validator.iter_errors(isvc)] == []


def test_a_repository_without_gpu_models_asks_for_none(tmp_path: Path) -> None:
    models = Repository()
    models.bind("Cpu", batch(lambda x: {"y": x}), inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
                outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))])  # fmt: skip
    build_repository(models, tmp_path / "repo")
    options = DeployOptions(docker=True, compose=True, k8s=True, context=tmp_path)
    written = generate(tmp_path / "repo", options).files
    assert "--gpus" not in written["Dockerfile"] and "cuda-memory-pool" not in written["Dockerfile"]
    assert "deploy" not in yaml.safe_load(written["compose.yaml"])["services"]["repo"]
    assert "nvidia.com/gpu" not in written["kubernetes.yaml"]
