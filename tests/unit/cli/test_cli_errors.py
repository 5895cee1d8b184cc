"""One error root, one exit-code rule, and one ``--triton-release`` for every command that takes a release.

Usage errors (a missing argument, a release no table row matches, options that contradict each other:
tests/unit/cli/test_usage_errors.py) are click's: exit status 2. Every other ``RepogenError`` is printed once by
``repogen.cli`` as ``Error: ...``: exit status 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.commands.params import TritonRelease
from repogen.errors import BuildError, DeployError, RepogenError, RepositoryError, ServeError, UnknownReleaseError
from repogen.server.client.infer import InferError
from repogen.server.provision.install import ServerInstallError
from repogen.server.provision.pythons import PythonNotFoundError
from repogen.server.running.process import TritonServerError
from repogen.triton.releases import NEWEST, get_release

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = f"{ROOT / 'examples' / 'quickstart' / 'app.py'}:models"
SPELLINGS = ["24.10", "r24.10", "24.10-py3", "2.51.0", "2.51", "v2.51.0", "nvcr.io/nvidia/tritonserver:24.10-py3"]
NO_PORTS = ("--http-port", "0", "--grpc-port", "0", "--metrics-port", "0")


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), prog_name="repogen")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("errors") / "repo"
    build_app(QUICKSTART, out)
    return out


def test_every_error_type_has_one_root() -> None:
    for error in (BuildError, DeployError, RepositoryError, UnknownReleaseError, ServeError, ServerInstallError,
                  PythonNotFoundError, TritonServerError, InferError):  # fmt: skip
        assert issubclass(error, RepogenError), error


@pytest.mark.parametrize(
    "args",
    [
        ("build",),  # missing APP
        ("build", "no_colon_here", "-o", "{repo}/out"),  # malformed APP (repogen.loader)
        ("deploy", "{repo}", "--k8s", "--triton-release", "latest"),
        ("validate", "{repo}", "--triton-release", "26.13"),
        ("serve", "{repo}", "--triton-release", "2.38.0"),
        ("build", "x.py:models", "-o", "{repo}/out", "--triton-release", "23.09"),
    ],
)
def test_usage_errors_exit_2(repo: Path, args: tuple[str, ...]) -> None:
    result = run(*(a.format(repo=repo) for a in args))
    assert result.exit_code == 2, result.output
    assert "Usage: repogen" in result.stderr
    if "--triton-release" in args:
        assert "Invalid value for '--triton-release'" in result.stderr
        assert f"expected an NGC release from 23.10 on (the table reaches {NEWEST.ngc}" in result.stderr


def test_domain_errors_exit_1_with_one_error_line(tmp_path: Path) -> None:
    deploy = run("deploy", str(tmp_path), "--k8s")  # RepositoryError
    build = run("build", str(tmp_path / "missing.py:models"), "-o", str(tmp_path / "out"))  # BuildError
    serve = run("serve", str(tmp_path / "missing"))  # RepositoryError, before anything starts
    for result, message in (
        (deploy, f"Error: {tmp_path} holds no model (no <model>/config.pbtxt)"),
        (build, f"Error: app file {tmp_path / 'missing.py'} does not exist"),
        (serve, f"Error: model repository {tmp_path / 'missing'} is not a directory; build one first"),
    ):
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(message), result.stderr
        assert result.stderr.count("Error:") == 1 and "Traceback" not in result.output


def test_serve_says_which_releases_it_can_embed(tmp_path: Path) -> None:
    result = run("serve", str(tmp_path), "--triton-release", "24.11", *NO_PORTS)
    assert result.exit_code == 1
    message = result.stderr
    assert "tritonserver 2.52.0 (NGC 24.11) ships in no PyPI wheel" in message
    assert "2.39.0 (NGC 23.10), tritonserver 2.41.0 (NGC 23.12), tritonserver 2.51.0 (NGC 24.10)" in message
    assert "--tritonserver PATH" in message and "nvcr.io/nvidia/tritonserver:24.11-py3" in message


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_the_parameter_type_reads_every_spelling(spelling: str) -> None:
    assert TritonRelease().convert(spelling, None, None) == get_release("24.10")


def _command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)  # commands load on demand (repogen.cli)
    assert command is not None, name
    return command


def test_every_command_takes_the_same_option() -> None:
    names = {}
    for command in ("build", "serve", "deploy", "validate", "tune"):
        params = _command(command).params
        (option,) = [p for p in params if "--triton-release" in p.opts]
        assert isinstance(option.type, TritonRelease), command
        names[command] = sorted(
            o for p in params if getattr(p, "hidden", False) and isinstance(p.type, TritonRelease) for o in p.opts
        )
    assert names["build"] == ["--target-triton", "--triton-version"]  # the old names keep working, hidden
    assert names["validate"] == ["--release", "--triton-version"]
    assert names["serve"] == names["deploy"] == names["tune"] == ["--triton-version"]


@pytest.mark.parametrize("command", ["build", "serve", "deploy", "validate"])
def test_help_names_the_releases(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0, result.output
    assert "--triton-release" in result.stdout and "RELEASE" in result.stdout


def test_each_command_acts_on_the_release_it_was_given(repo: Path, tmp_path: Path) -> None:
    result = run("validate", str(repo), "--triton-release", "nvcr.io/nvidia/tritonserver:23.12-py3")
    assert result.exit_code == 0 and "checked against Triton 23.12" in result.stdout
    result = run("deploy", str(repo), "--kserve", "--storage-uri", "s3://b/x", "--triton-release", "v2.57")
    assert yaml.safe_load(result.stdout)["spec"]["predictor"]["model"]["runtimeVersion"] == "25.04-py3"
    result = run("build", QUICKSTART, "-o", str(tmp_path / "out"), "--triton-release", "r25.01")
    assert result.exit_code == 0, result.output
    target = json.loads((tmp_path / "out" / "AddSub" / "1" / "model.json").read_text())["target"]
    assert (target["ngc"], target["tritonserver"], target["python"]) == ("25.01", "2.54.0", "3.12")
    result = run("serve", str(repo), "--triton-release", "24.10-py3", "--tritonserver", "/bin/true", *NO_PORTS)
    assert result.exit_code == 2 and "Pass one or the other" in result.stderr  # accepted, then refused the mix
