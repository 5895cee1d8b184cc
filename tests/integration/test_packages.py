"""Third-party packages travel inside the repository: a stock server with numpy alone serves them.

The app (``tests/apps/packages``: scikit-learn with scipy, onnxruntime on a graph made with onnx at
build time, PyYAML, numpy only) is built by the default Python with default options from a venv
holding those packages, then served by the pairing under test (``make test`` runs this module on
2.39/2.41/2.51 + Python 3.10 and 2.51 + 3.12) from a numpy-only venv that nothing is installed into.
Every answer equals the builder's own, over HTTP and gRPC.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from repogen.testing.answers import assert_answers_match
from repogen.testing.client import PROTOCOLS, infer
from repogen.testing.packages_app import build_packages_app, expected_answers

pytestmark = [pytest.mark.integration, pytest.mark.smoke]  # also on every pairing `make test` runs

INPUTS = {
    "Forest": {"x": np.array([[0.5, -3.0, 0.01, 2.0], [-1.0, 12.0, -0.2, -4.0], [2.0, 0.0, 0.0, 9.0]])},
    "Onnx": {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    "Yaml": {"text": np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4, z: [1]}"]], dtype=object)},
    "Plain": {"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)},
}  # the same as expected.py's


def site_packages(venv) -> list[str]:
    """Every file of the server venv: what a load could have installed shows up here."""
    return sorted(os.path.join(d, f) for d, _, files in os.walk(venv.path) for f in files if "__pycache__" not in d)


@pytest.fixture(scope="module")
def packaged(repogen_cache_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("packages")
    build_packages_app(repogen_cache_dir, root / "repo")
    return root / "repo", expected_answers(repogen_cache_dir, root / "expected.npz")


@pytest.fixture(scope="module")
def served(packaged, serve, triton_install):
    before = site_packages(triton_install.venv)
    server = serve(packaged[0])
    return server, before


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_model_answers_as_the_builder_computed(packaged, served, protocol):
    _, expected = packaged
    server, _ = served
    for model, inputs in INPUTS.items():
        answer = infer(protocol, server, model, inputs)
        for name, value in answer.items():
            assert_answers_match({name: value}, {name: expected[f"{model}.{name}"]}, f"{model} over {protocol}")
    version = infer(protocol, server, "Onnx", INPUTS["Onnx"])["version"][0, 0]
    assert version.decode() == str(expected["versions.onnxruntime"])  # the builder's version, not another


def test_the_server_venv_has_numpy_alone_and_stays_unchanged(served, triton_install):
    server, before = served
    assert all(m.get("state") == "READY" for m in server.models_status())
    assert site_packages(triton_install.venv) == before
    probe = (
        "import importlib.util as u; print([m for m in ('sklearn', 'onnxruntime', 'yaml', 'scipy') if u.find_spec(m)])"
    )
    found = subprocess.run([str(triton_install.venv.python), "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_lock_records_what_ships_and_onnx_does_not(packaged, triton_install):
    repo, expected = packaged
    meta = json.loads((repo / "Forest" / "1" / "model.json").read_text())
    trees = meta["packages"]
    assert sorted(trees) == ["cp310-x86_64", "cp312-x86_64"]
    for tree in trees.values():
        lock = {pin["name"]: pin["version"] for pin in tree["lock"]}
        assert lock["scikit-learn"] == str(expected["versions.scikit-learn"])
        assert lock["scipy"] == str(expected["versions.scipy"])
        assert "numpy" not in lock and "cloudpickle" not in lock
        assert all(len(pin["sha256"]) == 64 and pin["wheel"].endswith(".whl") for pin in tree["lock"])
    onnx_lock = {p["name"] for t in json.loads((repo / "Onnx" / "1" / "model.json").read_text())["packages"].values()
                 for p in t["lock"]}  # fmt: skip
    assert "onnxruntime" in onnx_lock and "onnx" not in onnx_lock  # onnx ran at build time only
    assert "packages" not in json.loads((repo / "Plain" / "1" / "model.json").read_text())


def test_the_sbom_lists_every_wheel_shipped_per_container_python(packaged):
    """sbom.cdx.json, read from what model.json records: each wheel per tree, its sha256, license and requirements."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    repo, _ = packaged
    text = (repo / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    document = json.loads(text)
    components = {c["bom-ref"]: c for c in document["components"]}
    edges = {d["ref"]: set(d.get("dependsOn", [])) for d in document["dependencies"]}
    forest = json.loads((repo / "Forest" / "1" / "model.json").read_text())
    for tree, entry in forest["packages"].items():
        python = f"{tree[2]}.{tree[3:].split('-')[0]}"
        for pin in entry["lock"]:
            ref = f"{tree}/{pin['name'].lower().replace('_', '-')}=={pin['version']}"
            component = components[ref]
            assert component["hashes"] == [{"alg": "SHA-256", "content": pin["sha256"]}]
            assert component["purl"].endswith(f"?file_name={pin['wheel']}")
            assert {"name": "repogen:python", "value": python} in component["properties"]
            assert pin["license"], pin  # every wheel here states one
        sklearn = f"{tree}/scikit-learn=={[p for p in entry['lock'] if p['name'] == 'scikit-learn'][0]['version']}"
        assert sklearn in edges["model:Forest/1"]
        needs = {ref.split("/")[1].split("==")[0] for ref in edges[sklearn]}
        assert {"scipy", "joblib", "threadpoolctl"} <= needs and "numpy" not in needs  # the container's numpy
    assert not any(ref.startswith(("cp310-x86_64/onnx==", "cp312-x86_64/onnx==")) for ref in components)
