"""Which numpy a backend stub can send arrays of, read off its binary (tests/integration/test_numpy2_refused.py
serves the refusal on the real stub)."""

from __future__ import annotations

import os

from repogen.runtime.contract import STUB_NAME
from repogen.runtime.stub import numpy_problem


def _stub(tmp_path, content: bytes) -> str:
    path = tmp_path / STUB_NAME
    path.write_bytes(b"\x7fELF..." + content + b"...")
    return str(path)


def test_numpy_2_beside_a_stub_built_for_numpy_1_is_refused_naming_both(tmp_path):
    old = _stub(tmp_path, b"numpy.core.multiarray")
    problem = numpy_problem("M", "2.2.6", old)
    assert problem is not None
    assert problem.startswith("model 'M' cannot serve with numpy 2.2.6 in the server's Python: this tritonserver's ")
    assert f"backend stub ({os.path.realpath(old)}) is built for numpy 1" in problem
    assert numpy_problem("M", "1.26.4", old) is None


def test_a_stub_that_knows_numpy_2_and_other_processes_are_left_alone(tmp_path):
    assert numpy_problem("M", "2.2.6", _stub(tmp_path, b"numpy._core")) is None  # pybind11 >= 2.12: NGC 24.11 on
    other = tmp_path / "python3"
    other.write_bytes(b"numpy.core")
    assert numpy_problem("M", "2.2.6", str(other)) is None  # not a stub: repogen.local, tests
    assert numpy_problem("M", "2.2.6", str(tmp_path / "missing")) is None
