"""A build leaves the output and nothing else: no lock files (the writer locks the parent directory
itself), no staging directories beside the output, nothing in the temp directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_two_builds_leave_only_the_output(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    parent = tmp_path / "out"
    env = {**os.environ, "TMPDIR": str(temp)}
    for _ in range(2):  # the second replaces the first: the swap's old copy must go too
        subprocess.run(
            [sys.executable, "-m", "repogen", "build", "examples/quickstart/app.py:models", "-o", str(parent / "repo")],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
    assert sorted(p.name for p in parent.iterdir()) == ["repo"]
    assert list(temp.iterdir()) == []
