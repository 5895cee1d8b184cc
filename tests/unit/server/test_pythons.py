"""Finding the containers' Pythons, the serving pairing under test, and builder venvs — without a server.

Interpreters are faked with shell scripts that answer the probe, so these tests do not depend on
which Pythons the machine has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from repogen.server.provision import pythons
from repogen.server.provision.pythons import (
    PythonNotFoundError,
    container_python_or_current,
    find_python,
    require_python,
)
from repogen.testing import builders
from repogen.testing.server_under_test import PYTHON_ENV, RELEASE_ENV, pairing_under_test
from repogen.triton.releases import DEFAULT_RELEASE, RELEASES, get_release, pairing_label


def fake_python(path: Path, version: str, base: str | None = None) -> Path:
    """An executable answering repogen's interpreter probe as Python ``version``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    answer = {"python_version": version, "libdir": "", "ldlibrary": "", "base_executable": base or str(path)}
    path.write_text(f"#!/bin/sh\necho '{json.dumps(answer)}'\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def no_pythons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty pyenv root and a PATH with nothing on it; returns the pyenv root."""
    root = tmp_path / "pyenv"
    (root / "versions").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PYENV_ROOT", str(root))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    return root


def test_find_python_takes_pyenvs_highest_patch_that_really_is_the_version(no_pythons: Path) -> None:
    versions = no_pythons / "versions"
    fake_python(versions / "3.10.2" / "bin" / "python", "3.10")
    fake_python(versions / "3.10.9" / "bin" / "python", "3.10")
    fake_python(versions / "3.10.13" / "bin" / "python", "3.11")  # lies about its version: skipped
    fake_python(versions / "3.10.20t" / "bin" / "python", "3.10")  # free-threaded build: not a candidate
    assert find_python("3.10") == versions / "3.10.9" / "bin" / "python"


def test_find_python_falls_back_to_path_and_returns_the_base_interpreter(no_pythons: Path, tmp_path: Path) -> None:
    fake_python(tmp_path / "bin" / "python3.12", "3.12", base="/opt/py312/bin/python3.12")
    assert find_python("3.12") == Path("/opt/py312/bin/python3.12")
    assert find_python("3.13") is None


def test_require_python_says_where_it_looked_and_how_to_install(no_pythons: Path) -> None:
    with pytest.raises(PythonNotFoundError) as missing:
        require_python("3.10")
    message = str(missing.value)
    assert f"{no_pythons}/versions/3.10.*/bin/python" in message and "python3.10 on PATH" in message
    assert "pyenv install 3.10" in message
    with pytest.raises(ValueError, match="major.minor"):
        find_python("3.10.13")


def test_check_pythons_lists_interpreters_and_fails_naming_the_missing(
    no_pythons: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_python(no_pythons / "versions" / "3.10.13" / "bin" / "python", "3.10")
    assert pythons.main(["3.10"]) == 0
    assert capsys.readouterr().out == f"Python 3.10: {no_pythons}/versions/3.10.13/bin/python\n"
    assert pythons.main(["3.10", "3.13"]) == 1
    assert "missing: Python 3.13 (pyenv install 3.13)" in capsys.readouterr().err


def test_serving_falls_back_to_this_python_in_one_line_naming_the_pairing_it_is_not(no_pythons: Path) -> None:
    python, version, note = container_python_or_current(DEFAULT_RELEASE)
    assert version == f"{sys.version_info[0]}.{sys.version_info[1]}" and python.exists()
    assert note is not None and "\n" not in note
    assert note.startswith("Python 3.10 not found (pyenv install 3.10); serving on tritonserver 2.51.0 + Python 3.")
    assert note.endswith("instead of NGC 24.10's Python 3.10.")
    fake_python(no_pythons / "versions" / "3.10.13" / "bin" / "python", "3.10")
    assert container_python_or_current(DEFAULT_RELEASE) == (no_pythons / "versions/3.10.13/bin/python", "3.10", None)


def test_pairing_labels_name_the_container_or_say_there_is_none() -> None:
    assert pairing_label(get_release("2.39.0"), "3.10") == "tritonserver 2.39.0 + Python 3.10 (NGC 23.10)"
    first = next(r for r in RELEASES if r.python == "3.12")  # 24.11: Ubuntu 24.04 (the release table)
    assert (
        pairing_label(DEFAULT_RELEASE, "3.12") == f"tritonserver 2.51.0 + Python 3.12 (stands in for NGC {first.ngc}+)"
    )
    assert pairing_label(DEFAULT_RELEASE, "3.11") == "tritonserver 2.51.0 + Python 3.11 (matches no NGC container)"


def test_pairing_under_test_defaults_to_the_release_containers_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RELEASE_ENV, raising=False)
    monkeypatch.delenv(PYTHON_ENV, raising=False)
    assert pairing_under_test().label == "tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"
    monkeypatch.setenv(RELEASE_ENV, "23.12")
    assert (pairing_under_test().release.tritonserver, pairing_under_test().python) == ("2.41.0", "3.10")
    monkeypatch.setenv(RELEASE_ENV, "2.51.0")
    monkeypatch.setenv(PYTHON_ENV, "3.12")
    assert pairing_under_test().python == "3.12"


def test_pairing_under_test_refuses_a_python_the_release_has_no_stub_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RELEASE_ENV, "2.39.0")
    monkeypatch.setenv(PYTHON_ENV, "3.12")
    with pytest.raises(ValueError, match=r"stubs for Python 3\.8, 3\.9, 3\.10, 3\.11 only.*=2\.51\.0"):
        pairing_under_test()
    monkeypatch.setenv(PYTHON_ENV, "python3.10")
    with pytest.raises(ValueError, match="major.minor"):
        pairing_under_test()
    monkeypatch.setenv(RELEASE_ENV, "24.11")  # a release of the table, but no wheel ships it
    with pytest.raises(ValueError, match=r"=24\.11: tritonserver 2\.52\.0 \(NGC 24\.11\) has no PyPI wheel"):
        pairing_under_test()


def _builder_venv(cache: Path, **marked: str) -> tuple[Path, dict[str, str]]:
    """A Python 3.10 builder venv in ``cache`` as this checkout would mark it, with ``marked`` changed."""
    venv = cache / "builder-venv-py3.10"
    venv.mkdir()
    marker = {**builders._wanted(builders.checkout_root(), "3.10"), "base": sys.executable, **marked}
    (venv / builders.BUILDER_MARKER).write_text(json.dumps(marker))
    return venv, marker


def _no_interpreter(version: str) -> Path:
    raise PythonNotFoundError(f"Python {version} not found: the venv was to be made anew")


def test_builder_venv_is_reused_while_current_and_rebuilt_when_pyproject_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv, marker = _builder_venv(tmp_path)
    assert builders.ensure_builder_venv("3.10", tmp_path) == venv
    monkeypatch.setattr(builders, "require_python", _no_interpreter)
    (venv / builders.BUILDER_MARKER).write_text(json.dumps({**marker, "pyproject_sha256": "0" * 64}))
    with pytest.raises(PythonNotFoundError, match="Python 3.10 not found: the venv was to be made anew"):
        builders.ensure_builder_venv("3.10", tmp_path)


def test_a_builder_venv_of_another_checkout_gets_this_checkouts_repogen_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI clones into a new directory every run: its builder venvs keep their dependencies and packages."""
    root = builders.checkout_root()
    venv, marker = _builder_venv(tmp_path, checkout="/elsewhere/repogen")
    commands: list[list[str]] = []

    def step(cmd: list[str], what: str, hint: str) -> None:
        assert not (venv / builders.BUILDER_MARKER).exists(), "the marker stays while repogen is swapped"
        commands.append(cmd)

    monkeypatch.setattr(builders, "require_python", _no_interpreter)
    monkeypatch.setattr(builders, "run_step", step)
    assert builders.ensure_builder_venv("3.10", tmp_path) == venv
    assert commands == [[str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input",
                         "--disable-pip-version-check", "--quiet", "--no-deps", "-e", str(root)]]  # fmt: skip
    assert json.loads((venv / builders.BUILDER_MARKER).read_text()) == {**marker, "checkout": str(root)}
    assert builders.ensure_builder_venv("3.10", tmp_path) == venv and len(commands) == 1  # current now


def test_build_with_raises_with_the_builds_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\necho \"built $*\"\necho 'no module app' >&2\nexit 3\n")
    (venv / "bin" / "python").chmod(0o755)
    monkeypatch.setattr(builders, "ensure_builder_venv", lambda version, cache_dir=None, packages=(): venv)
    with pytest.raises(builders.BuildWithError) as failed:
        builders.build_with("3.13", "app.py:models", tmp_path / "out", "--force")
    message = str(failed.value)
    assert "under Python 3.13 failed (exit code 3)" in message
    assert f"built -m repogen build app.py:models -o {tmp_path / 'out'} --force" in message
    assert "no module app" in message


def _serve(tmp_path: Path, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from repogen.cli import cli

    ports = ("--http-port", "0", "--grpc-port", "0", "--metrics-port", "0")
    result = CliRunner().invoke(cli, ["serve", str(tmp_path), *ports, *args])
    return result.exit_code, result.output


def test_serve_server_python_must_have_a_stub_and_be_installed(tmp_path: Path, no_pythons: Path) -> None:
    code, output = _serve(tmp_path, "--triton-release", "2.39.0", "--server-python", "3.12")
    assert code == 1 and "--server-python 3.12: tritonserver 2.39.0 (NGC 23.10) has backend stubs for" in output
    code, output = _serve(tmp_path, "--server-python", "3.12")
    assert code == 1 and "--server-python 3.12: Python 3.12 not found" in output and "pyenv install 3.12" in output
    code, output = _serve(tmp_path, "--tritonserver", sys.executable, "--server-python", "3.10")
    assert code == 2 and "Pass one or the other" in output
