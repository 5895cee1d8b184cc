"""Building the same app twice, in fresh processes, gives byte-identical files.

The two builds differ in everything that should not matter: the directory the app lives in
and the string-hash seed (with the CLI's own seed pinning switched off).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _files(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*")) if p.is_file()}


def _build(app_dir: Path, app: str, out: Path, seed: str) -> dict[str, bytes]:
    env = dict(os.environ, PYTHONHASHSEED=seed, REPOGEN_NO_REEXEC="1")
    subprocess.run(
        [sys.executable, "-m", "repogen", "build", f"{app_dir / app}:models", "-o", str(out)],
        check=True,
        env=env,
        cwd=app_dir,
        capture_output=True,
    )
    return _files(out)


@pytest.mark.parametrize("source", ["examples/quickstart", "tests/apps/features", "tests/apps/live"])
def test_two_builds_are_byte_identical(tmp_path, source):
    first_dir, second_dir = tmp_path / "one" / "proj", tmp_path / "elsewhere" / "deeper" / "proj"
    shutil.copytree(ROOT / source, first_dir)
    shutil.copytree(ROOT / source, second_dir)
    first = _build(first_dir, "app.py", tmp_path / "out1", seed="1")
    second = _build(second_dir, "app.py", tmp_path / "out2", seed="4242")
    assert sorted(first) == sorted(second)
    different = [path for path in first if first[path] != second[path]]
    assert different == []
    pickles = [p for p in first if p.endswith("model.pkl")]
    assert pickles, "the build wrote no payload"
    for path in pickles:
        assert str(tmp_path).encode() not in first[path], f"{path} embeds a build-machine path"
