"""What the layer contracts (import-linter, `make lint`) cannot say: allowlists, checked at run time.

* The runtime is vendored into every model and runs on a stock server: every import it makes is the
  standard library, numpy, the backend's ``triton_python_backend_utils`` or another runtime module.
* ``import repogen`` in a user's app loads the declarations and decorators only: no protobuf,
  cloudpickle, click, tritonclient or grpc until a build (or an in-process run) starts.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[3] / "repogen" / "runtime"
ALLOWED = {"numpy", "triton_python_backend_utils"}
# A runtime module that only some models load may import what the build ships with exactly those
# models: onnx_session is bound only by models.onnx(..., backend="python"), whose versions ship onnxruntime.
SHIPPED_WITH = {"onnx_session.py": {"onnxruntime"}}


def _absolute_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_the_runtime_imports_only_the_standard_library_and_numpy():
    offending = [
        f"{path.relative_to(RUNTIME.parent)}:{line}: import {module}"
        for path in sorted(RUNTIME.rglob("*.py"))
        for line, module in _absolute_imports(path)
        if module.split(".")[0] not in sys.stdlib_module_names | ALLOWED | SHIPPED_WITH.get(path.name, set())
    ]
    assert offending == [], "the vendored runtime may import only the standard library and numpy"


def test_relative_imports_in_the_runtime_stay_inside_it():
    escaping = [
        f"{path.relative_to(RUNTIME.parent)}:{node.lineno}"
        for path in sorted(RUNTIME.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > len(path.relative_to(RUNTIME).parts)
    ]
    assert escaping == []


def test_import_repogen_loads_no_compiler_cli_or_client_dependencies():
    heavy = (
        "google.protobuf", "cloudpickle", "click", "tritonclient", "grpc", "filelock", "yaml", "onnx", "onnxruntime",
    )  # fmt: skip
    script = f"import sys, repogen; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    script = "import sys, repogen; repogen.build_app; print('cloudpickle' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout == "True\n"
