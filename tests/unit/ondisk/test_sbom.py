"""sbom.cdx.json: every build's CycloneDX 1.6 SBOM is valid, deterministic, read by another tool, and printable.

Validity is CycloneDX's own JSON schema (1.6, strict: cyclonedx-python-lib's validator) on the quickstart,
the pipeline example and every golden family (ONNX, TorchScript, TensorRT, included directories, fused and
plain ensembles...). lib4sbom, an independent CycloneDX consumer, reads the components and their
relationships. tests/integration/test_packages.py checks the shipped wheels, per container Python.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.ondisk.describe import read_sbom
from repogen.runtime.contract import SBOM_FILE

ROOT = Path(__file__).resolve().parents[3]
#: Every golden repository's SBOM: ``<family>/expected/`` and a targeted family's ``expected-<release>/``.
GOLDEN = sorted((ROOT / "tests" / "golden").glob(f"*/expected*/{SBOM_FILE}"))
GOLDEN_REPOSITORIES = sorted(p for p in (ROOT / "tests" / "golden").glob("*/expected*") if p.is_dir())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("sbom")
    apps = {"quickstart": "examples/quickstart/app.py", "pipeline": "examples/pipeline/app.py"}
    for name, app in apps.items():
        build_app(f"{ROOT / app}:models", where / name)
    return {name: where / name for name in apps}


def _errors(path: Path) -> object:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    return JsonStrictValidator(SchemaVersion.V1_6).validate_str(path.read_text(encoding="utf-8"))


def test_every_golden_repository_has_an_sbom_checked_here() -> None:
    assert [p.parent for p in GOLDEN] == GOLDEN_REPOSITORIES
    assert any(p.parent.name.startswith("expected-") for p in GOLDEN)  # the targets family's builds too


@pytest.mark.parametrize("path", GOLDEN, ids=["/".join(p.parts[-3:-1]) for p in GOLDEN])
def test_every_golden_sbom_is_valid_cyclonedx_1_6(path: Path) -> None:
    assert _errors(path) is None


def test_a_build_writes_a_valid_deterministic_sbom_of_its_models(built: dict[str, Path]) -> None:
    for repo in built.values():
        assert _errors(repo / SBOM_FILE) is None
    document = json.loads((built["pipeline"] / SBOM_FILE).read_text())
    assert document["specVersion"] == "1.6" and "timestamp" not in document["metadata"]
    assert uuid.UUID(document["serialNumber"].removeprefix("urn:uuid:")).version == 5  # from the content
    models = {c["name"]: c for c in document["components"] if c["type"] == "machine-learning-model"}
    assert set(models) == {p.name for p in built["pipeline"].iterdir() if p.is_dir()}
    record = json.loads((built["pipeline"] / "Tokenize" / "1" / "model.json").read_text())
    assert models["Tokenize"]["hashes"] == [{"alg": "SHA-256", "content": record["payload"]["sha256"]}]
    edges = {d["ref"]: set(d.get("dependsOn", [])) for d in document["dependencies"]}
    assert {"model:Tokenize/1", "model:Embed/1", "model:Classify/1"} <= edges["model:Pipeline/1"]  # ensemble steps
    assert "repogen-runtime" in edges["model:Tokenize/1"]  # what every model ships
    assert not any(c["name"] == "cloudpickle" for c in document["components"])  # no payload of it needs cloudpickle


def test_cloudpickle_is_a_dependency_of_the_models_that_carry_it() -> None:
    """A class pickled by value unpickles through cloudpickle's helpers: only such a model carries it."""
    repo = ROOT / "tests" / "golden" / "class_files" / "expected"
    document = json.loads((repo / SBOM_FILE).read_text())
    edges = {d["ref"]: set(d.get("dependsOn", [])) for d in document["dependencies"]}
    manifest = json.loads((repo / "repogen.manifest.json").read_text())["files"]
    assert (
        "Vocabulary/1/cloudpickle/cloudpickle.py" in manifest and "Greeter/1/cloudpickle/cloudpickle.py" not in manifest
    )
    assert "cloudpickle==3.1.2" in edges["model:Vocabulary/1"] and "cloudpickle==3.1.2" not in edges["model:Greeter/1"]
    cloudpickle = next(c for c in document["components"] if c["name"] == "cloudpickle")
    assert cloudpickle["purl"] == "pkg:pypi/cloudpickle@3.1.2" and cloudpickle["licenses"][0]["license"]["name"]


def test_lib4sbom_reads_it(built: dict[str, Path]) -> None:
    from lib4sbom.parser import SBOMParser

    parser = SBOMParser()
    parser.parse_file(str(built["pipeline"] / SBOM_FILE))
    assert parser.get_type() == "cyclonedx"
    packages = {p["name"]: p for p in parser.get_packages()}
    assert packages["Tokenize"]["type"] == "MACHINE-LEARNING-MODEL"
    assert packages["repogen-runtime"]["version"]
    relations = {(r["source_id"], r["target_id"]) for r in parser.get_relationships()}
    assert ("model:Pipeline/1", "model:Tokenize/1") in relations


def test_inspect_prints_it_and_makes_the_same_one_for_a_repository_without(built: dict[str, Path]) -> None:
    repo = built["quickstart"]
    printed = CliRunner().invoke(cli, ["inspect", str(repo), "--sbom"])
    assert printed.exit_code == 0 and printed.output == (repo / SBOM_FILE).read_text()
    stored = (repo / SBOM_FILE).read_bytes()
    (repo / SBOM_FILE).unlink()
    try:
        remade, found = read_sbom(repo)
        assert not found and remade == stored  # the records on disk give the build's own SBOM back
    finally:
        (repo / SBOM_FILE).write_bytes(stored)


def test_a_version_build_lists_every_version(tmp_path: Path) -> None:
    app = f"{ROOT / 'examples/quickstart/app.py'}:models"
    build_app(app, tmp_path / "repo")
    build_app(app, tmp_path / "repo", version=2)
    document = json.loads((tmp_path / "repo" / SBOM_FILE).read_text())
    refs = {c["bom-ref"] for c in document["components"]}
    assert {"model:AddSub/1", "model:AddSub/2", "model:Shout/1", "model:Shout/2"} <= refs
    assert _errors(tmp_path / "repo" / SBOM_FILE) is None
    manifest = json.loads((tmp_path / "repo" / "repogen.manifest.json").read_text())
    assert SBOM_FILE in manifest["files"]  # listed, so the signatures and the manifest cover it
