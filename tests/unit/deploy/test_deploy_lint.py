"""What `repogen deploy` writes passes the tools its users check with: hadolint, kubernetes-validate, KServe's CRD.

Every file is written by the real command (`python -m repogen deploy ... -o DIR`), then checked by
hadolint (Dockerfiles), `kubernetes-validate --strict` for Kubernetes 1.30 and 1.37 (Deployment,
Service, HorizontalPodAutoscaler), and jsonschema against KServe's own InferenceService schema
(vendored: tests/schemas/kserve/README.md), strict about unknown fields. All three come from PyPI
through the dev extras (`make install`).
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from repogen.build import build_app
from repogen.signing import SignWith
from repogen.testing.signing import ec_key

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = "examples/quickstart/app.py:models"
KSERVE_SCHEMA = ROOT / "tests" / "schemas" / "kserve" / "inferenceservice-v1beta1.schema.json.gz"
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")


def _tool(name: str) -> str:
    found = Path(sys.executable).parent / name
    if found.is_file():
        return str(found)
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; it comes with the dev extras: pip install -e '.[dev]' (make install)")
    return path


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lint") / "model_repository"
    build_app(str(ROOT / QUICKSTART), out)
    return out


def _deploy(repo: Path, out: Path, *args: str) -> Path:
    cmd = [sys.executable, "-m", "repogen", "deploy", str(repo), "-o", str(out), *args]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The quickstart, signed (``--verify-key`` refuses an unsigned repository), and the public key."""
    where = tmp_path_factory.mktemp("signed")
    key = ec_key(where)
    out = where / "model_repository"
    build_app(str(ROOT / QUICKSTART), out, sign=SignWith(key=key.private))
    return out, key.public


@pytest.fixture(scope="module")
def written(
    repo: Path, signed: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Path]]:
    base = tmp_path_factory.mktemp("deploy-out")
    repository, key = signed
    yield {
        "built": _deploy(repo, ROOT / "build" / "deploy-lint", "--docker", "--k8s", "--app", QUICKSTART,
                         "--storage-uri", "s3://b/q", "--kserve"),  # under the context: the wheel is written there
        "prebuilt": _deploy(repo, base / "prebuilt", "--docker", "--prebuilt", "--context", str(repo.parent),
                            "--triton-release", "25.01"),
        "scaled": _deploy(repo, base / "scaled", "--k8s", "--kserve", "--image", "registry.example.com/q:1",
                          "--replicas", "2", "--max-replicas", "5", "--gpus", "1", "--name", "quickstart"),
        "verified": _deploy(repository, repository.parent / "deploy", "--docker", "--k8s", "--kserve", "--context",
                            str(repository.parent), "--verify-key", str(key), "--storage-uri", "s3://b/q"),
        "verified-image": _deploy(repository, base / "verified-image", "--k8s", "--kserve", "--image",
                                  "registry.example.com/q:1", "--verify-key-secret", "model-signing-key"),
    }  # fmt: skip
    shutil.rmtree(ROOT / "build" / "deploy-lint", ignore_errors=True)


def test_dockerfiles_pass_hadolint(written: dict[str, Path]) -> None:
    for name in ("built", "prebuilt", "verified"):
        dockerfile = written[name] / "Dockerfile"
        result = subprocess.run([_tool("hadolint"), "--no-color", str(dockerfile)], capture_output=True, text=True)
        assert result.returncode == 0, f"{dockerfile}:\n{result.stdout}{result.stderr}"
        assert "HEALTHCHECK" in dockerfile.read_text()


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_kubernetes_manifests_pass_strict_validation(written: dict[str, Path], version: str) -> None:
    for name in ("built", "scaled", "verified", "verified-image"):
        manifest = written[name] / "kubernetes.yaml"
        cmd = [_tool("kubernetes-validate"), "--strict", "--kubernetes-version", version, str(manifest)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, f"{manifest} on Kubernetes {version}:\n{result.stdout}{result.stderr}"
    kinds = [d["kind"] for d in yaml.safe_load_all((written["scaled"] / "kubernetes.yaml").read_text())]
    assert kinds == ["Deployment", "Service", "HorizontalPodAutoscaler"]


def _strict(schema: Any) -> Any:
    """Unknown fields fail, as with `kubectl apply --validate=strict`, instead of being pruned."""
    if isinstance(schema, dict):
        schema = {key: _strict(value) for key, value in schema.items()}
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
    elif isinstance(schema, list):
        schema = [_strict(item) for item in schema]
    return schema


@pytest.fixture(scope="module")
def kserve_validator() -> Any:
    import jsonschema

    schema = _strict(json.loads(gzip.decompress(KSERVE_SCHEMA.read_bytes())))
    return jsonschema.Draft7Validator(schema)


def test_inference_services_match_kserves_schema(written: dict[str, Path], kserve_validator: Any) -> None:
    for name in ("built", "scaled", "verified", "verified-image"):
        *config_maps, isvc = yaml.safe_load_all((written[name] / "inferenceservice.yaml").read_text())
        errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in kserve_validator.iter_errors(isvc)]
        assert errors == [], name
        assert [c["kind"] for c in config_maps] == (["ConfigMap"] if name == "verified" else [])
    assert (
        "minReplicas" in yaml.safe_load((written["scaled"] / "inferenceservice.yaml").read_text())["spec"]["predictor"]
    )


def test_the_strict_schema_catches_a_misspelled_field(written: dict[str, Path], kserve_validator: Any) -> None:
    (isvc,) = yaml.safe_load_all((written["built"] / "inferenceservice.yaml").read_text())
    isvc["spec"]["predictor"]["model"]["storageURI"] = isvc["spec"]["predictor"]["model"].pop("storageUri")
    messages = [e.message for e in kserve_validator.iter_errors(isvc)]
    assert any("'storageURI' was unexpected" in m for m in messages), messages
