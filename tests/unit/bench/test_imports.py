"""Every bench/ module imports as `make bench` runs it (bench/ first on the path): a module moved into the package
and still imported by its old name stops `make bench` before it measures anything, which no other test sees.

Three modules need what only their own environments hold (matplotlib: bench/.venv-pytriton's chart; onnxruntime:
the ONNX builder venv; pytriton: the PyTriton app); a missing import of theirs is told apart from a broken one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
ELSEWHERE = {"chart": "matplotlib", "onnx_ceiling": "onnxruntime", "pytriton_app": "pytriton"}
_PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        print(f"{name}\\t{exc.name}")
    except Exception as exc:
        print(f"{name}\\t{type(exc).__name__}: {exc}")
"""


def test_every_bench_module_imports_where_make_bench_runs_it():
    modules = sorted(path.stem for path in BENCH.glob("*.py"))
    assert {"run", "waiting", "streaming", "report"} <= set(modules)
    found = subprocess.run(
        [sys.executable, "-c", _PROBE, *modules], cwd=BENCH, capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()
    failures = dict(line.split("\t", 1) for line in found)
    allowed = {name: missing for name, missing in failures.items() if ELSEWHERE.get(name) == missing.split(".")[0]}
    broken = {name: why for name, why in failures.items() if name not in allowed}
    assert not broken, f"bench modules that do not import from bench/ (as `make bench` runs them): {broken}"
