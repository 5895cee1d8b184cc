"""What Model Analyzer is told to launch: the embedded server with its flags, or the user's --tritonserver as it is."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from repogen.cli import cli
from repogen.server.provision.perf_analyzer import PerfAnalyzer
from repogen.tuning.analyzer_config import SearchBudget, given_launch, plan_tuning

QUICKSTART = Path(__file__).resolve().parents[2] / "golden" / "quickstart" / "expected"


def test_a_given_tritonserver_runs_with_its_own_backends_and_the_users_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/opt/tritonserver/lib")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    binary = Path("/opt/tritonserver/bin/tritonserver")
    plan = plan_tuning(QUICKSTART, tmp_path, given_launch(binary), PerfAnalyzer(tmp_path / "pa"), SearchBudget())
    config = yaml.safe_load(plan.config_file.read_text())
    assert config["triton_server_path"] == str(binary)
    assert "backend-directory" not in config["triton_server_flags"]  # the container's own backends
    assert config["triton_server_flags"]["http-address"] == "127.0.0.1"
    environment = config["triton_server_environment"]
    assert "VIRTUAL_ENV" not in environment  # not set here: not invented
    assert environment["LD_LIBRARY_PATH"].split(":") == [str(tmp_path / "pa" / "lib"), "/opt/tritonserver/lib"]


def test_tritonserver_and_the_embedded_choices_exclude_each_other(tmp_path):
    result = CliRunner().invoke(
        cli, ["tune", str(QUICKSTART), "--tritonserver", "/bin/true", "--server-python", "3.10"]
    )
    assert result.exit_code == 2
    assert (
        "--tritonserver runs the binary you name (with its own Python); --triton-release/--server-python "
        "select the embedded server. Pass one or the other." in " ".join(result.output.split())
    )


def test_a_tritonserver_that_is_not_there_is_named(tmp_path):
    result = CliRunner().invoke(cli, ["tune", str(QUICKSTART), "--tritonserver", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert f"--tritonserver {tmp_path / 'nope'}: no executable file there" in result.output
