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
from repogen.triton.devices import gpu_shortfall

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
        serving.gpu_arguments(repo, ())
    assert str(refused.value) == gpu_shortfall("SecondGpu", 2, ["SecondGpu_0 on GPUs [1]"], 1)
    monkeypatch.setattr(serving, "visible_gpus", lambda: ["GPU 0: NVIDIA H100", "GPU 1: NVIDIA H100"])
    assert serving.gpu_arguments(repo, ()) == []  # small tensors: the default CUDA memory pool holds them


def test_the_cli_says_so_and_starts_nothing(repo):
    done = subprocess.run([sys.executable, "-m", "repogen", "serve", str(repo)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("Error: model 'AnyGpu' runs KIND_GPU instances (AnyGpu_0) and needs 1 GPU, but ")
    assert "tritonserver" not in done.stdout
