"""`repogen deploy --compose`: the file's shape; tests/containers/test_compose.py runs it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repogen.build import build_app
from repogen.deploy import DeployOptions, generate
from repogen.deploy.files import COMPOSE_FILE, DOCKERFILE
from repogen.errors import UsageError
from repogen.triton.releases import NEWEST

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("compose") / "project" / "model_repository"
    build_app(str(ROOT / "examples/quickstart/app.py:models"), out)
    return out


def _service(text: str) -> dict:
    (service,) = yaml.safe_load(text)["services"].values()
    return service


def test_the_stock_image_serves_the_repository_mounted_read_only(repo):
    out = generate(repo, DeployOptions(compose=True, output_dir=repo.parent / "deploy"))
    assert list(out.files) == [COMPOSE_FILE]
    service = _service(out.files[COMPOSE_FILE])
    assert service["image"] == f"${{TRITON_IMAGE:-{NEWEST.image}}}"
    assert service["volumes"] == ["../model_repository:/models:ro"]  # relative to the file's directory
    shell, flag, line = service["command"]  # the Dockerfile's CMD: the key from $REPOGEN_ACCESS_TOKEN, or no start
    assert (shell, flag) == ("/bin/sh", "-c") and "exec tritonserver --model-repository=/models" in line
    assert '"$${REPOGEN_ACCESS_TOKEN:?' in line and ":triton-access-token=$${REPOGEN_ACCESS_TOKEN}" in line
    assert service["environment"] == ["REPOGEN_ACCESS_TOKEN"] and service["user"] == "1000:1000"
    assert service["ports"][0] == "${TRITON_ADDRESS:-127.0.0.1}:${TRITON_HTTP_PORT:-8000}:8000"
    assert service["shm_size"] == "64m" and service["restart"] == "unless-stopped"
    health = service["healthcheck"]
    assert health["test"][:3] == ["CMD", "python3", "-c"] and health["start_period"] == "600s"
    assert "$" not in "".join(health["test"]).replace("$$", "")  # compose interpolates a lone $


def test_with_nothing_restricted_the_command_is_tritonservers_own(repo):
    service = _service(generate(repo, DeployOptions(compose=True, restrict=())).files[COMPOSE_FILE])
    assert service["command"] == ["tritonserver", "--model-repository=/models"] and "environment" not in service


def test_prebuilt_builds_the_dockerfile_written_beside_it(repo):
    out = generate(repo, DeployOptions(compose=True, prebuilt=True, image="reg/qs:1", context=repo.parent,
                                       output_dir=repo.parent / "deploy"))  # fmt: skip
    assert DOCKERFILE in out.files
    service = _service(out.files[COMPOSE_FILE])
    assert service["image"] == "reg/qs:1" and "volumes" not in service
    assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile",
                                "args": {"TRITON_IMAGE": f"${{TRITON_IMAGE:-{NEWEST.image}}}"}}  # fmt: skip


def test_nothing_to_generate_names_compose(repo):
    with pytest.raises(UsageError, match="--docker, --k8s, --kserve, --compose"):
        generate(repo, DeployOptions())
