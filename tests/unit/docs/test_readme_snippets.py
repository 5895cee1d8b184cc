"""The Python the README and the documentation pages show is code that runs.

A block that names a file on its first line (``# examples/...``) is an excerpt of it, line for line, so
an edit that drifts from what the tests build and serve fails here; every block of the README names one.
A page's other blocks (sketches around files that are not in the repository) must compile and call
repogen's API with names and keywords it has. The examples' scripts run as the pages show them.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import repogen

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SOURCE = re.compile(r"# ((?:examples|tests)/\S+\.py)\n")


def _blocks() -> list[tuple[Path, int, str]]:
    """(page, its block number from 1, the block) for every Python block of every page."""
    return [
        (page, number, block)
        for page in PAGES
        for number, block in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), start=1)
    ]


BLOCKS = _blocks()
NAMED = [(page, number, block) for page, number, block in BLOCKS if SOURCE.match(block)]
SKETCHES = [(page, number, block) for page, number, block in BLOCKS if not SOURCE.match(block)]


def _id(page: Path, number: int) -> str:
    return f"{page.relative_to(ROOT)}#{number}"


def test_the_readme_shows_the_quickstart_and_the_pages_the_rest():
    readme = [block for page, _, block in NAMED if page == README]
    assert readme and readme[0].startswith("# examples/quickstart/app.py\n")
    assert len(NAMED) >= 4
    for page, number, block in BLOCKS:
        if page == README:
            assert SOURCE.match(block), f"README.md python block {number} must start with '# examples/<file>.py'"


@pytest.mark.parametrize(("page", "number", "block"), NAMED, ids=[_id(p, n) for p, n, _ in NAMED])
def test_block_is_an_excerpt_of_the_file_it_names(page, number, block):
    named = SOURCE.match(block)
    where = f"{page.relative_to(ROOT)} python block {number}"
    path = ROOT / named.group(1)
    assert path.is_file(), f"{where} names {named.group(1)}, which does not exist"
    excerpt = block[named.end() :].splitlines()
    lines = path.read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line == excerpt[0]]
    assert any(lines[i : i + len(excerpt)] == excerpt for i in starts), (
        f"{where} is not a contiguous excerpt of {named.group(1)}: "
        "copy the lines from the file (or change the file and the page together)"
    )


def _api(call: ast.Call) -> tuple[str, object] | None:
    """The repogen callable a sketch's call names: ``Tensor(...)``, ``models.onnx(...)``; None for others."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in repogen.__all__:
        return func.id, getattr(repogen, func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "models":
        assert hasattr(repogen.Repository, func.attr), f"Repository has no method {func.attr!r}"
        return f"models.{func.attr}", getattr(repogen.Repository, func.attr)
    return None


@pytest.mark.parametrize(("page", "number", "block"), SKETCHES, ids=[_id(p, n) for p, n, _ in SKETCHES])
def test_a_sketch_compiles_and_calls_the_api_as_it_is(page, number, block):
    where = f"{page.relative_to(ROOT)} python block {number}"
    tree = ast.parse(block, filename=where)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "repogen":
            missing = [alias.name for alias in node.names if alias.name not in repogen.__all__]
            assert not missing, f"{where} imports {missing} from repogen, which does not export them"
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        found = _api(node)
        if found is None or any(k.arg is None for k in node.keywords):
            continue
        name, target = found
        signature = inspect.signature(target)
        positional = [None] * (len(node.args) + (1 if name.startswith("models.") else 0))  # self
        try:
            signature.bind(*positional, **{k.arg: None for k in node.keywords})
        except TypeError as exc:
            pytest.fail(f"{where}, line {node.lineno}: {name}{signature} does not take this call: {exc}")


def test_try_locally_runs_as_shown():
    script = ROOT / "examples" / "pipeline" / "try_locally.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("{'label': array([[b'")
    assert "b'ONE'" in lines[1] and "b'TWO'" in lines[1]
    assert "'count': array([[1]]" in lines[2]


def test_the_waiting_example_runs_as_shown():
    script = ROOT / "examples" / "waiting" / "try_locally.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "{'scores': array([2., 8., 8.], dtype=float32)}",
        "{'totals': array([3. , 7.5, 8.5], dtype=float32)}",
        "{'length': array([6], dtype=int32)}",
    ]
