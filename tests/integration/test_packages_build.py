"""Shipping packages, at build time only: merges, modes, determinism and the wheel cache.

``tests/apps/packages/yaml_only.py`` imports PyYAML, which repogen itself depends on, so this
process builds it directly (the wheels, a few MB, download into the cache once).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from repogen.build import build_app
from repogen.errors import BuildError
from repogen.ondisk.validate import validate_repository
from repogen.packages import PackageOptions

pytestmark = pytest.mark.integration

APP = "tests/apps/packages/yaml_only.py:models"
TREES = ["cp310-x86_64", "cp310-x86_64.files.json", "cp312-x86_64", "cp312-x86_64.files.json"]


@pytest.fixture(autouse=True)
def cache(repogen_cache_dir, monkeypatch):
    monkeypatch.setenv("REPOGEN_CACHE_DIR", str(repogen_cache_dir))


def _meta(repo: Path, version: int = 1) -> dict:
    return json.loads((repo / "Yaml" / str(version) / "model.json").read_text())


def test_a_second_version_keeps_the_first_ones_packages(tmp_path):
    repo = tmp_path / "repo"
    build_app(APP, repo)
    build_app(APP, repo, version=2)
    for version in (1, 2):
        assert sorted(os.listdir(repo / "Yaml" / str(version) / "packages")) == TREES
    manifest = json.loads((repo / "repogen.manifest.json").read_text())
    assert sorted(manifest["packages"]) == [f"Yaml/{v}/packages/{t}" for v in (1, 2) for t in TREES[::2]]
    assert validate_repository(repo) == []
    victim = repo / "Yaml" / "1" / "packages" / "cp312-x86_64" / "yaml" / "__init__.py"
    data = victim.read_bytes()
    victim.unlink()
    victim.write_bytes(data + b"#")
    with pytest.raises(BuildError, match="the packages in Yaml/1/packages/cp312-x86_64 are not the ones"):
        build_app(APP, repo, version=3)


def test_record_mode_ships_nothing_and_keeps_the_requirement(tmp_path):
    repo = tmp_path / "repo"
    build_app(APP, repo, packages=PackageOptions(mode="record"))
    assert not (repo / "Yaml" / "1" / "packages").exists()
    assert _meta(repo)["requirements"]["yaml"].startswith("PyYAML==")
    assert "packages" not in _meta(repo)


def test_builds_are_identical_and_an_edit_through_a_link_never_reaches_the_next_build(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    build_app(APP, first)
    shipped = first / "Yaml" / "1" / "packages" / "cp310-x86_64" / "yaml" / "__init__.py"
    original = shipped.read_bytes()
    os.chmod(shipped, 0o644)  # the cache's file, read-only, reached through the repository's hard link
    shipped.write_bytes(original + b"\n# edited through a link\n")
    build_app(APP, second)
    assert (second / "Yaml" / "1" / "packages" / "cp310-x86_64" / "yaml" / "__init__.py").read_bytes() == original
    build_app(APP, first, force=True)
    for name in ("Yaml/1/model.json", "repogen.manifest.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    lock = _meta(second)["packages"]["cp310-x86_64"]["lock"]
    assert [pin["name"] for pin in lock] == ["PyYAML"] and lock[0]["wheel"].endswith(".whl")
