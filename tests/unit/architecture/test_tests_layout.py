"""tests/unit is laid out as the package is (docs/architecture.md, "A tour of tests/"): every unit test sits in its
layer's folder or its kind's (architecture, cli, docs, golden), none at the root, so a module's tests are found by
its name; the shared helpers sit in helpers/ (pyproject.toml's pytest ``pythonpath``)."""

from __future__ import annotations

from pathlib import Path

UNIT = Path(__file__).resolve().parents[1]


def test_unit_tests_sit_in_a_folder_by_layer_or_kind():
    loose = sorted(path.name for path in UNIT.glob("*.py"))
    assert not loose, f"tests/unit holds {loose} at its root: move each into its layer's folder (docs/architecture.md)"


def test_helpers_hold_no_tests():
    tests = sorted(path.name for path in (UNIT / "helpers").glob("test_*.py"))
    assert not tests, f"tests/unit/helpers holds {tests}: a test goes in its layer's folder, helpers/ is on sys.path"
