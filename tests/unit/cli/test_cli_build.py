"""`repogen build`: click-style errors, progress for large repositories, ensembles counted."""

from __future__ import annotations

from click.testing import CliRunner

from repogen.cli import cli

MANY = """
import numpy as np
from repogen import ModelConfig, Repository, Tensor

models = Repository()
for i in range({count}):
    models.bind(f"M{{i:03d}}", lambda requests: requests, [Tensor((1,), np.float32, "x")],
                [Tensor((1,), np.float32, "y")], config=ModelConfig(batching=False))
"""


def _app(tmp_path, count):
    app = tmp_path / "many.py"
    app.write_text(MANY.format(count=count))
    return f"{app}:models"


def test_large_builds_report_progress_on_stderr(tmp_path):
    result = CliRunner().invoke(cli, ["build", _app(tmp_path, 25), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "[1/25] M000" in result.stderr and "[25/25] M024" in result.stderr
    assert result.stdout.startswith("Built 25 model(s) into") and "M000, M001, M002, M003, M004, ..." in result.stdout


def test_small_builds_stay_quiet(tmp_path):
    result = CliRunner().invoke(cli, ["build", _app(tmp_path, 3), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0 and result.stderr == ""
    assert "Built 3 model(s)" in result.stdout and "M000, M001, M002" in result.stdout


def test_errors_are_click_style(tmp_path):
    result = CliRunner().invoke(cli, ["build", "no_colon_here", "-o", str(tmp_path / "out")], prog_name="repogen")
    assert result.exit_code == 2 and result.stderr.startswith("Usage: repogen build [OPTIONS] APP")
    assert "Error: app 'no_colon_here' is not of the form 'path/to/app.py:attr'" in result.stderr
    result = CliRunner().invoke(cli, ["build"])
    assert result.exit_code == 2 and "Missing argument 'APP'" in result.stderr
