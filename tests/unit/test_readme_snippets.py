"""The README's Python is the examples' code: each block names its file on its first line
(``# examples/...``) and is an excerpt of it, line for line, so a README edit that drifts from
what the tests build and serve fails here. The examples' scripts run as the README shows them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SOURCE = re.compile(r"# (examples/\S+\.py)\n")


def _blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 4


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_block_is_an_excerpt_of_the_example_it_names(index):
    block = _blocks()[index]
    named = SOURCE.match(block)
    assert named, f"README.md python block {index + 1} must start with '# examples/<file>.py', found {block[:60]!r}"
    path = ROOT / named.group(1)
    assert path.is_file(), f"README.md python block {index + 1} names {named.group(1)}, which does not exist"
    excerpt = block[named.end() :].splitlines()
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line == excerpt[0]]
    assert any(lines[i : i + len(excerpt)] == excerpt for i in starts), (
        f"README.md python block {index + 1} is not a contiguous excerpt of {named.group(1)}: "
        "copy the lines from the file (or change the file and the README together)"
    )


def test_try_locally_runs_as_shown():
    script = ROOT / "examples" / "pipeline" / "try_locally.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("{'label': array([[b'")
    assert "b'ONE'" in lines[1] and "b'TWO'" in lines[1]
    assert "'count': array([[1]]" in lines[2]
