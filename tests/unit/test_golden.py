"""The quickstart builds to exactly the checked-in repository under tests/golden/quickstart.

The golden files include the vendored runtime, so they change whenever the runtime, templates or
emitters do; that is the point (the diff is reviewed), and `make golden` accepts it. The vendored
cloudpickle is third-party code and stays out of this repository: it is compared through the
sha256 the manifest records for each of its files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repogen.emit.files import MANIFEST, build_environment
from repogen.testing.golden import assert_repository_matches

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
HINT = "the build output changed: if that is intended, run `make golden` and commit tests/golden with the change"


def _build(app: str, output: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "repogen", "build", app, "-o", str(output)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )


def _skip_unless_same_environment(golden: Path) -> None:
    """Pickles and the manifest record the build's Python/numpy/cloudpickle: another stack differs by design."""
    recorded = json.loads((golden / MANIFEST).read_text(encoding="utf-8"))["build"]
    if recorded != build_environment():
        pytest.skip(f"{golden} was generated with {recorded}, this environment is {build_environment()}")


def test_quickstart_matches_golden(tmp_path: Path) -> None:
    golden = GOLDEN / "quickstart"
    assert golden.is_dir(), f"{golden} is missing: run `make golden`"
    _skip_unless_same_environment(golden)
    _build("examples/quickstart/app.py:models", tmp_path / "quickstart")
    for vendored in (tmp_path / "quickstart").glob("*/*/cloudpickle"):
        shutil.rmtree(vendored)
    assert_repository_matches(golden, tmp_path / "quickstart", hint=HINT)
