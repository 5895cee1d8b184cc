"""A repository's KIND_GPU models against the GPUs a server has: validate --gpus N names each model a server of N
GPUs would fail to load, serve refuses to start one this machine's GPUs cannot load (a GPU machine's count is
stood in for: none here)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.errors import ServeError
from repogen.ondisk.reader import model_dirs
from repogen.ondisk.validate import validate_repository
from repogen.server.running import serving
from repogen.triton import gpus
from repogen.triton.gpus import GpuQueryError, gpu_shortfall, visible_gpus

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    models = Repository()
    groups = {
        "Cpu": None,
        "AnyGpu": [InstanceGroup(kind="KIND_GPU")],
        "SecondGpu": [InstanceGroup(kind="KIND_GPU", gpus=[1]), InstanceGroup(kind="KIND_CPU")],
    }
    for name, instance_groups in groups.items():
        config = ModelConfig(max_batch_size=4, instance_groups=instance_groups)
        models.bind(name, batch(lambda x: {"y": x}), inputs=X, outputs=Y, config=config)
    out = tmp_path_factory.mktemp("gpus") / "repo"
    build_repository(models, out)
    return out


def test_each_model_says_how_many_gpus_it_needs(repo):
    needs = {m.name: (m.gpus_needed, m.gpu_groups) for m in model_dirs(repo)}
    assert needs == {"AnyGpu": (1, ["AnyGpu_0"]), "Cpu": (0, []), "SecondGpu": (2, ["SecondGpu_0 on GPUs [1]"])}


@pytest.mark.parametrize(("gpus", "short"), [(0, ["AnyGpu", "SecondGpu"]), (1, ["SecondGpu"]), (2, [])])
def test_validate_names_each_model_a_server_of_that_many_gpus_cannot_load(repo, gpus, short):
    problems = validate_repository(repo, gpus=gpus)
    assert not any(p.warning for p in problems)
    assert [p.message.split("'")[1] for p in problems] == short
    assert [p.path for p in problems] == [str(repo / name / "config.pbtxt") for name in short]
    assert validate_repository(repo) == []  # without --gpus nothing is said of GPUs


def test_the_cli_takes_the_count_and_fails_naming_the_model(repo):
    command = [sys.executable, "-m", "repogen", "validate", str(repo), "--gpus", "1"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {repo / 'SecondGpu' / 'config.pbtxt'}: model 'SecondGpu' runs KIND_GPU ")


def test_the_message_names_the_groups_the_count_and_the_fixes():
    message = gpu_shortfall("M", 2, ["M_0 on GPUs [1]"], 1)
    assert message == (
        "model 'M' runs KIND_GPU instances (M_0 on GPUs [1]) and needs 2 GPUs, but this machine has 1 NVIDIA GPU: a "
        "tritonserver here fails to load it. Serve it where there are (a container with `docker run --gpus all`; "
        '`repogen deploy` asks for them), or give it instance_groups=[InstanceGroup(kind="KIND_CPU")] to run on the CPU'
    )
    assert "has no NVIDIA GPU (nvidia-smi lists none)" in gpu_shortfall("M", 1, ["M_0"], 0)
    assert gpu_shortfall("M", 1, ["M_0"], 1) is None


def test_serve_refuses_before_starting_a_server_too_few_gpus_would_fail(repo, monkeypatch):
    monkeypatch.setattr(serving, "visible_gpus", lambda: ["GPU 0: NVIDIA H100"])
    with pytest.raises(ServeError) as refused:
        serving.repository_arguments(repo, ())
    assert str(refused.value) == gpu_shortfall("SecondGpu", 2, ["SecondGpu_0 on GPUs [1]"], 1)
    monkeypatch.setattr(serving, "visible_gpus", lambda: ["GPU 0: NVIDIA H100", "GPU 1: NVIDIA H100"])
    assert serving.repository_arguments(repo, ()) == []  # small tensors: the default CUDA memory pool holds them


def test_the_cli_says_so_and_starts_nothing(repo):
    done = subprocess.run([sys.executable, "-m", "repogen", "serve", str(repo)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: model 'AnyGpu' runs KIND_GPU instances (AnyGpu_0) and needs 1 GPU, but ")
    assert "tritonserver" not in done.stdout


def _nvidia_smi(tmp_path, monkeypatch, script: str) -> None:
    """An nvidia-smi on PATH that runs ``script`` (sh), standing in for a driver in a given state."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(f"#!/bin/sh\n{script}\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(smi.parent))


def test_only_a_missing_nvidia_smi_or_no_devices_means_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert visible_gpus() == []
    _nvidia_smi(tmp_path, monkeypatch, 'echo "No devices were found"; exit 6')
    assert visible_gpus() == []


def test_the_gpus_nvidia_smi_lists(tmp_path, monkeypatch):
    _nvidia_smi(tmp_path, monkeypatch, 'echo "GPU 0: NVIDIA H100 (UUID: GPU-1)"; echo "  MIG 1g.10gb Device 0: x"')
    assert visible_gpus() == ["GPU 0: NVIDIA H100 (UUID: GPU-1)"]


def test_a_broken_driver_is_an_error_not_a_machine_without_gpus(tmp_path, monkeypatch, repo):
    _nvidia_smi(
        tmp_path,
        monkeypatch,
        'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver." >&2; exit 9',
    )
    with pytest.raises(GpuQueryError, match=r"-L` failed \(exit 9: NVIDIA-SMI has failed because it couldn't "):
        visible_gpus()
    with pytest.raises(ServeError, match=r"has GPU models, but `.*nvidia-smi -L` failed \(exit 9"):
        serving.repository_arguments(repo, ())


def test_a_hung_driver_is_an_error(tmp_path, monkeypatch):
    _nvidia_smi(tmp_path, monkeypatch, "exec /bin/sleep 30")
    monkeypatch.setattr(gpus, "NVIDIA_SMI_TIMEOUT_S", 0.5)
    with pytest.raises(GpuQueryError, match=r"did not answer in 0.5 s: the NVIDIA driver is hung"):
        visible_gpus()
