"""``repogen validate`` agrees with the real server: what it passes loads and answers, and every
model it flags is one tritonserver refuses to load.

A hand-written repository (raw ``pb_utils`` models and an ensemble, no repogen involved) holds good
models and broken ones; one server loads it with ``--exit-on-error=false`` so each model's fate
can be read from the repository index.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repogen.cli import cli
from repogen.ondisk.validate import validate_repository
from repogen.testing.client import PROTOCOLS, infer

pytestmark = pytest.mark.integration

MODEL_PY = """import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "x").as_numpy()
            y = ({expression}).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("y", y)]))
        return responses
"""

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 8
input {{ name: "x" data_type: TYPE_FP32 dims: [ -1 ] }}
output {{ name: "y" data_type: TYPE_FP32 dims: [ -1 ] }}
instance_group {{ count: 1 kind: KIND_CPU }}
"""

ENSEMBLE = """name: "{name}"
platform: "ensemble"
max_batch_size: 8
input {{ name: "raw" data_type: TYPE_FP32 dims: [ -1 ] }}
output {{ name: "result" data_type: TYPE_FP32 dims: [ -1 ] }}
ensemble_scheduling {{
  step {{ model_name: "Pre" model_version: -1
         input_map {{ key: "{pre_in}" value: "{pre_tensor}" }} output_map {{ key: "y" value: "mid" }} }}
  step {{ model_name: "Post" model_version: -1
         input_map {{ key: "x" value: "mid" }} output_map {{ key: "y" value: "result" }} }}
}}
"""


def _python_model(repo: Path, directory: str, config: str, expression: str = "x") -> None:
    (repo / directory / "1").mkdir(parents=True)
    (repo / directory / "config.pbtxt").write_text(config)
    (repo / directory / "1" / "model.py").write_text(MODEL_PY.format(expression=expression))


def _ensemble(repo: Path, name: str, pre_in: str = "x", pre_tensor: str = "raw") -> None:
    (repo / name / "1").mkdir(parents=True)
    (repo / name / "config.pbtxt").write_text(ENSEMBLE.format(name=name, pre_in=pre_in, pre_tensor=pre_tensor))


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("handwritten") / "repo"
    _python_model(repo, "Pre", CONFIG.format(name="Pre"), "x + 1")
    _python_model(repo, "Post", CONFIG.format(name="Post"), "x * 2")
    _ensemble(repo, "Pipeline")
    # Broken, each in one way validate reports:
    _python_model(repo, "Metrics", CONFIG.format(name="Metrics") + "model_metrics { }\n")
    _python_model(repo, "Misnamed", CONFIG.format(name="SomethingElse"))
    _ensemble(repo, "Reversed", pre_in="raw", pre_tensor="x")
    return repo


@pytest.fixture(scope="module")
def server(triton_install, repository, tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "tritonserver.log"
    instance = triton_install.server(
        repository, log_path=log, extra_args=["--exit-on-error=false", "--strict-readiness=false"]
    )
    instance.start()
    try:
        instance.wait_ready(120)
        yield instance
    finally:
        instance.stop()


BROKEN = {
    "Metrics": "sets 'model_metrics' (inference.ModelConfig.model_metrics), introduced in Triton 24.11",
    "Misnamed": "name is 'SomethingElse' but the directory is 'Misnamed'",
    "Reversed": "input_map key 'raw' is not an input of Pre",
}


def test_validate_flags_exactly_the_broken_models(repository: Path, triton_install) -> None:
    release = triton_install.install.release  # the server below: a hand-written repository names no target
    problems = validate_repository(repository, release)
    flagged = {Path(p.path).relative_to(repository).parts[0] for p in problems}
    assert flagged == set(BROKEN)
    for model, message in BROKEN.items():
        assert any(message in str(p) for p in problems if f"/{model}/" in p.path), (model, problems)
    result = CliRunner().invoke(cli, ["validate", str(repository), "--triton-release", release.tritonserver])
    assert result.exit_code == 1


def test_server_loads_what_validate_passes_and_refuses_what_it_flags(server) -> None:
    states = {m["name"]: m.get("state") for m in server.models_status()}
    assert {name: states.get(name) for name in ("Pre", "Post", "Pipeline")} == dict.fromkeys(
        ("Pre", "Post", "Pipeline"), "READY"
    )
    for name in BROKEN:
        assert states.get(name) != "READY", (name, states)
    log = server.log_path.read_text(errors="replace")
    for name, reason in SERVER_REASONS.items():
        assert f"Poll failed for model directory '{name}': {reason}" in log, log


#: What tritonserver 2.51 logs for each broken model (the whole reason it gives the user).
SERVER_REASONS = {
    "Metrics": "failed to read text proto from",
    "Misnamed": "unexpected directory name 'Misnamed' for model 'SomethingElse'",
    "Reversed": "ensemble input 'raw' for ensemble Reversed' is not used",
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_validated_ensemble_answers(server, protocol) -> None:
    raw = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = infer(protocol, server, "Pipeline", {"raw": raw})
    np.testing.assert_array_equal(out["result"], (raw + 1) * 2)
