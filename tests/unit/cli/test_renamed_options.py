"""A Triton release is a release and a model version a version in every name; the former spellings still work.

`--triton-version` (and `build --target-triton`, `validate --release`) are `--triton-release`, `build --version N`
is `--model-version N`: each former spelling does what the new one does and says so in one line on stderr. The
library's former keywords (`build_app(target_triton=...)`, `ServeOptions`/`DeployOptions(triton_version=...)`)
and the test pairing's `$REPOGEN_TRITON_VERSION` still work with a `DeprecationWarning`.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.deploy import DeployOptions, generate
from repogen.server.running.serving import ServeOptions
from repogen.testing.server_under_test import FORMER_RELEASE_ENV, RELEASE_ENV, release_under_test
from repogen.triton.releases import get_release

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = f"{ROOT / 'examples' / 'quickstart' / 'app.py'}:models"
KSERVE = ("--kserve", "--storage-uri", "s3://bucket/repo")  # its runtimeVersion is the release's


def run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), prog_name="repogen")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("renamed") / "repo"
    build_app(QUICKSTART, out)
    return out


@pytest.mark.parametrize("former", ["--triton-version", "--target-triton"])
def test_build_takes_a_former_release_spelling_with_a_warning_and_builds_the_same(tmp_path: Path, former: str) -> None:
    new = run("build", QUICKSTART, "-o", str(tmp_path / "new"), "--triton-release", "24.10")
    assert new.exit_code == 0, new.output
    assert "deprecated" not in new.stderr
    old = run("build", QUICKSTART, "-o", str(tmp_path / "old"), former, "24.10")
    assert old.exit_code == 0, old.output
    assert old.stderr.splitlines()[0] == f"Warning: {former} is deprecated; use --triton-release"
    assert _tree(tmp_path / "old") == _tree(tmp_path / "new")
    assert json.loads((tmp_path / "old" / "AddSub" / "1" / "model.json").read_text())["target"]["ngc"] == "24.10"


def test_build_takes_version_for_model_version_with_a_warning(tmp_path: Path) -> None:
    for out in ("new", "old"):
        assert run("build", QUICKSTART, "-o", str(tmp_path / out)).exit_code == 0
    new = run("build", QUICKSTART, "-o", str(tmp_path / "new"), "--model-version", "2")
    old = run("build", QUICKSTART, "-o", str(tmp_path / "old"), "--version", "2")
    assert new.exit_code == old.exit_code == 0, old.output
    assert "Warning: --version is deprecated; use --model-version" in old.stderr
    assert "deprecated" not in new.stderr
    assert (tmp_path / "old" / "AddSub" / "2" / "model.py").is_file()
    assert _tree(tmp_path / "old") == _tree(tmp_path / "new")


@pytest.mark.parametrize("former", ["--triton-version", "--release"])
def test_validate_takes_a_former_release_spelling(repo: Path, former: str) -> None:
    new, old = run("validate", str(repo), "--triton-release", "24.10"), run("validate", str(repo), former, "24.10")
    assert new.exit_code == old.exit_code == 0, old.output
    assert old.stdout == new.stdout and "checked against Triton 24.10" in old.stdout
    assert old.stderr == f"Warning: {former} is deprecated; use --triton-release\n"


def test_deploy_takes_the_former_spelling_over_its_default(repo: Path) -> None:
    new = run("deploy", str(repo), *KSERVE, "--triton-release", "24.10")
    old = run("deploy", str(repo), *KSERVE, "--triton-version", "24.10")
    assert new.exit_code == old.exit_code == 0, old.output
    assert old.stdout == new.stdout and "runtimeVersion: 24.10-py3" in old.stdout
    assert "Warning: --triton-version is deprecated; use --triton-release" in old.stderr


def test_two_spellings_of_one_option_are_refused(repo: Path, tmp_path: Path) -> None:
    both = run("validate", str(repo), "--triton-release", "24.10", "--release", "24.10")
    assert both.exit_code == 2
    assert "--triton-release and --release are one option: pass --triton-release only." in both.stderr
    both = run(
        "build", QUICKSTART, "-o", str(tmp_path / "out"), "--triton-version", "24.10", "--target-triton", "24.10"
    )
    assert both.exit_code == 2 and "pass --triton-release only" in both.stderr
    assert not (tmp_path / "out").exists()


def test_help_shows_only_the_new_spellings() -> None:
    for command in ("build", "validate", "deploy", "serve", "tune"):
        text = run(command, "--help").stdout
        assert "--triton-release" in text, command
        assert "--triton-version" not in text and "--target-triton" not in text and "--release " not in text
    assert "--model-version N" in run("build", "--help").stdout
    assert run("--version").stdout.startswith("repogen")  # repogen's own version keeps its name


def test_build_app_takes_target_triton_with_a_deprecation_warning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"build_app\(target_triton=\.\.\.\) is deprecated; use triton_release"):
        old = build_app(QUICKSTART, tmp_path / "old", target_triton="24.10")
    new = build_app(QUICKSTART, tmp_path / "new", triton_release="24.10")
    assert old.targets == new.targets and _tree(tmp_path / "old") == _tree(tmp_path / "new")
    with pytest.raises(TypeError, match="got both triton_release and target_triton"):
        build_app(QUICKSTART, tmp_path / "both", triton_release="24.10", target_triton="24.10")


def test_options_classes_take_triton_version_with_a_deprecation_warning(repo: Path) -> None:
    release = get_release("24.10")
    with pytest.warns(DeprecationWarning, match=r"ServeOptions\(triton_version=\.\.\.\) is deprecated"):
        serve = ServeOptions("repo", triton_version=release)
    assert serve == ServeOptions("repo", triton_release=release)
    with pytest.warns(DeprecationWarning, match=r"ServeOptions\.triton_version is deprecated"):
        assert serve.triton_version is release
    with pytest.warns(DeprecationWarning, match=r"DeployOptions\(triton_version=\.\.\.\) is deprecated"):
        deploy = DeployOptions(k8s=True, triton_version="24.10")
    assert generate(repo, deploy).files == generate(repo, DeployOptions(k8s=True, triton_release="24.10")).files
    with pytest.raises(TypeError, match="got both triton_release and triton_version"):
        DeployOptions(triton_release="24.10", triton_version="24.10")


def test_the_test_pairing_reads_the_former_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RELEASE_ENV, raising=False)
    monkeypatch.setenv(FORMER_RELEASE_ENV, "2.39.0")
    with pytest.warns(DeprecationWarning, match=r"\$REPOGEN_TRITON_VERSION is deprecated; use \$REPOGEN_TRITON_RELE"):
        assert release_under_test().tritonserver == "2.39.0"
    monkeypatch.setenv(RELEASE_ENV, "2.41.0")  # the new name wins
    assert release_under_test().tritonserver == "2.41.0"
