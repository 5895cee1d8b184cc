"""NVIDIA Model Analyzer, the tool Triton users tune instance counts and batching with, from PyPI.

It is a CLI with a heavy closure (optuna, numba, matplotlib, docker, gevent: ~600 MB) and pins of
its own (tritonclient, protobuf), so it gets a venv of its own in the cache, made once on first use
like the server and perf_analyzer, rather than an extra that would move the versions of the
user's environment. Only its ``model-analyzer`` executable is used.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from repogen.server.provision.install import ServerInstallError, default_cache_dir, locked, run_step

__all__ = ["VERSION", "ModelAnalyzer", "ensure_model_analyzer", "model_analyzer_installed"]

VERSION = "1.58.0"
MARKER = ".repogen-model-analyzer.json"


@dataclass(frozen=True)
class ModelAnalyzer:
    root: Path

    @property
    def executable(self) -> Path:
        return self.root / "bin" / "model-analyzer"


def _root(cache_dir: str | Path | None) -> Path:
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    return cache / f"model-analyzer-{VERSION}"


def model_analyzer_installed(cache_dir: str | Path | None = None) -> bool:
    return (_root(cache_dir) / MARKER).is_file()


def ensure_model_analyzer(cache_dir: str | Path | None = None) -> ModelAnalyzer:
    """Install ``triton-model-analyzer==1.58.0`` into ``<cache>/model-analyzer-1.58.0`` once; then reuse it."""
    final = _root(cache_dir)
    cache = final.parent
    if (final / MARKER).is_file():
        return ModelAnalyzer(final)
    with locked(cache, final.name):
        if (final / MARKER).is_file():
            return ModelAnalyzer(final)
        base = getattr(sys, "_base_executable", None) or sys.executable
        hint = "Check network access to your package index (Model Analyzer is installed once, ~600 MB)."
        try:
            # A venv's scripts name its own path, so it is made where it stays; the marker, written last, says
            # it is complete (an interrupted install is cleared and redone).
            run_step([base, "-m", "venv", "--clear", str(final)], f"creating a venv with {base}", hint)
            run_step(
                [str(final / "bin" / "python"), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                 "--quiet", f"triton-model-analyzer=={VERSION}"],
                f"installing triton-model-analyzer=={VERSION}",
                hint,
            )  # fmt: skip
            _check_runs(ModelAnalyzer(final))
            (final / MARKER).write_text(json.dumps({"triton-model-analyzer": VERSION}, indent=2) + "\n")
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
    return ModelAnalyzer(final)


def _check_runs(analyzer: ModelAnalyzer) -> None:
    proc = subprocess.run([str(analyzer.executable), "--help"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise ServerInstallError(
            f"Model Analyzer does not start ({analyzer.executable} --help exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-500:]}"
        )
