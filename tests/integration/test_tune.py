"""`repogen tune`: Model Analyzer on the embedded server with a tiny search; its answer is one
of the configs it measured, printed as ModelConfig arguments that rebuild into that config; Ctrl+C
leaves no server, stub or perf_analyzer behind."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from serve_cli import ROOT, cli_env

from repogen.server.provision.install import default_cache_dir, ensure_server, ensure_server_venv, venv_info
from repogen.server.provision.model_analyzer import ensure_model_analyzer
from repogen.server.provision.pythons import require_python
from repogen.testing.server_under_test import pairing_under_test, release_at_least
from repogen.triton.proto import model_config_pb2 as mc
from repogen.tuning import SearchBudget, TuneOptions, tune
from repogen.tuning.analyzer_config import embedded_launch
from repogen.tuning.run import processes_naming

pytestmark = pytest.mark.integration

APP = "tests/apps/tune/app.py:models"
HANG_S = 300  # a hang guard only, never a measure: Ctrl+C took ~8 s on 2 loaded cores
TUNED_FIELDS = ("max_batch_size", "instance_group", "dynamic_batching")


def _tuned(path: Path) -> dict[str, object]:
    config = text_format.Parse(path.read_text(), mc.ModelConfig())
    groups = [(g.count or 1, mc.ModelInstanceGroup.Kind.Name(g.kind)) for g in config.instance_group]
    batching = config.dynamic_batching if config.HasField("dynamic_batching") else None
    return {
        "max_batch_size": config.max_batch_size,
        "instance_group": groups,
        "dynamic_batching": None if batching is None else text_format.MessageToString(batching),
    }


def _tune_processes(own_tmp: Path) -> list[int]:
    """The processes of this test's tune run: its workdir is under a temporary directory no other run uses, so
    another tune on the machine neither passes nor fails these checks."""
    return processes_naming(own_tmp / "repogen-tune-")


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TMPDIR for this test alone (the in-process tune's tempfile and a CLI's, through the environment)."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


@pytest.fixture(scope="module")
def analyzer():
    return ensure_model_analyzer()  # ~600 MB from PyPI on a fresh machine, once


def test_the_recommendation_is_measured_and_rebuilds_into_its_config(analyzer, cli_build, tmp_path, own_tmp):
    pairing = pairing_under_test()
    repo = tmp_path / "repo"
    cli_build(APP, repo)
    lines: list[str] = []
    options = TuneOptions(pairing.release, pairing.python, ("Scale",), budget=SearchBudget(2, 1, 1, "brute"))
    (found,) = tune(repo, tmp_path / "reports", options, lines.append)
    # default, then max_batch_size 1 with 1 and 2 instances, each at concurrency 1
    assert found.measured[0] != found.measured[-1] and len(found.measured) == 3
    assert found.best.config in found.measured and found.today.config == "Scale_config_default"
    assert found.best.throughput > 0 and found.today.throughput > 0
    measured = tmp_path / "reports" / "configs" / found.best.config / "config.pbtxt"
    assert (tmp_path / "reports" / "results" / "metrics-model-inference.csv").is_file()
    _assert_restricted(tmp_path / "reports", lines)
    if found.best.config == "Scale_config_default":  # today's config won: nothing to change, and that rebuilds too
        assert found.arguments == {}
    else:
        assert found.arguments["max_batch_size"] == "1"  # every variant searched has 1
    printed = ", ".join(f"{k}={v}" for k, v in found.arguments.items())
    rebuilt = tmp_path / "rebuilt"
    env = {**os.environ, "TUNED_ARGUMENTS": printed}
    subprocess.run([sys.executable, "-m", "repogen", "build", APP, "-o", str(rebuilt)], cwd=ROOT, env=env, check=True)
    assert _tuned(rebuilt / "Scale" / "config.pbtxt") == _tuned(measured)
    # today's config, measured as the default, is what the app builds without arguments (what a default win prints)
    assert _tuned(repo / "Scale" / "config.pbtxt") == _tuned(measured.parents[1] / found.today.config / "config.pbtxt")
    assert not _tune_processes(own_tmp)
    assert not list(own_tmp.glob("repogen-tune-*"))  # its workdir is gone (the Ctrl+C test sees it there running)


def _assert_restricted(reports: Path, lines: list[str]) -> None:
    """Model Analyzer's server kept what it can do without behind the run's key, which perf_analyzer
    sent: without it perf_analyzer's statistics calls are refused and it measures nothing. The kept config and
    logs hold no key."""
    config = yaml.safe_load((reports / "model-analyzer.yaml").read_text())
    flags, key = config["triton_server_flags"], "<the run's access key>"
    restricted = "shared-memory,statistics,trace,logging:triton-access-token=" + key
    assert flags["grpc-restricted-protocol"] == restricted
    if release_at_least("2.40.0"):
        assert flags["http-restricted-api"] == restricted
    else:
        assert "http-restricted-api" not in flags and any("cannot restrict HTTP" in line for line in lines), lines
    assert config["client_protocol"] == "grpc"
    for model in config["profile_models"].values():
        assert model["perf_analyzer_flags"]["http-header"] == "triton-grpc-protocol-triton-access-token:" + key
    assert any("model-repository stay open" in line for line in lines), lines


def _container_tritonserver(directory: Path) -> Path:
    """A tritonserver as an NGC container has one: a command that brings its own backends and Python.

    Here the embedded release under test, behind a script that sets its environment and backend directory.
    """
    pairing = pairing_under_test()
    install = ensure_server(pairing.release)
    venv = venv_info(ensure_server_venv(python=require_python(pairing.python), numpy=pairing.release.numpy))
    launch = embedded_launch(install, venv)
    exports = " ".join(f"{k}={shlex.quote(launch.environment[k])}" for k in ("LD_LIBRARY_PATH", "PATH", "VIRTUAL_ENV"))
    flags = " ".join(shlex.quote(f"--{k}={v}") for k, v in sorted(launch.flags.items()))
    script = directory / "bin" / "tritonserver"
    script.parent.mkdir(parents=True)
    script.write_text(f'#!/bin/sh\nexport {exports}\nexec {shlex.quote(str(launch.binary))} {flags} "$@"\n')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("server", ["embedded", "--tritonserver"])
def test_ctrl_c_stops_everything_it_started(analyzer, tmp_path, server, own_tmp):
    """Profiling starts only once Model Analyzer's server has loaded the model: with --tritonserver, the user's."""
    pairing = pairing_under_test()
    if server == "embedded":
        choice = ["--triton-release", pairing.release.tritonserver, "--server-python", pairing.python]
    else:
        choice = ["--tritonserver", str(_container_tritonserver(tmp_path / "container"))]
    cmd = [sys.executable, "-m", "repogen", "tune", APP, "--max-instances", "2", "--max-batch-size", "2",
           "--max-concurrency", "2", "--reports", str(tmp_path / "reports"), *choice]  # fmt: skip
    env = cli_env(REPOGEN_CACHE_DIR=str(default_cache_dir()))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if "Profiling Scale_config_default" in line:
            break
    else:
        pytest.fail("".join(seen))
    assert _tune_processes(own_tmp), "Model Analyzer's server and perf_analyzer should be running now"
    proc.send_signal(signal.SIGINT)
    try:
        rest, _ = proc.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        rest, _ = proc.communicate()
        pytest.fail(f"repogen tune still ran {HANG_S} s after Ctrl+C:\n" + "".join(seen) + rest)
    assert proc.returncode != 0, "".join(seen) + rest
    # handled at once: the search went no further than the measurement it was in (the next one takes seconds)
    assert not [line for line in rest.splitlines() if "Profiling" in line or "Creating model config" in line], rest
    assert rest.strip().endswith("Aborted!"), rest
    assert not _tune_processes(own_tmp), "".join(seen) + rest
    assert not list(own_tmp.glob("repogen-tune-*/variants"))
