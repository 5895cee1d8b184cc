"""``repogen diff`` and ``repogen.testing.golden``: golden-file comparison of two repositories."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.cli import cli
from repogen.testing.golden import assert_repository_matches

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "tests" / "golden" / "quickstart"  # a generated repository, checked in


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    expected, actual = tmp_path / "expected", tmp_path / "actual"
    shutil.copytree(QUICKSTART, expected)
    shutil.copytree(QUICKSTART, actual)
    return expected, actual


def invoke(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["diff", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def change_dtype(repo: Path) -> None:
    config = repo / "Shout" / "config.pbtxt"
    text = config.read_text()
    assert "TYPE_INT64" in text
    config.write_text(text.replace("TYPE_INT64", "TYPE_INT32"))


def test_identical_repositories(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    (actual / "AddSub" / "1" / "__pycache__").mkdir()  # written by the server: ignored
    (actual / "AddSub" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    code, out, err = invoke(expected, actual)
    assert (code, err) == (0, "")
    assert out == f"{expected} and {actual} are identical\n"


def test_changed_dtype_is_shown_then_update_accepts_it(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    change_dtype(actual)
    code, out, err = invoke(expected, actual)
    assert code == 1
    assert f"--- {expected}/Shout/config.pbtxt\n+++ {actual}/Shout/config.pbtxt\n" in out
    assert "-  data_type: TYPE_INT64\n+  data_type: TYPE_INT32\n" in out
    assert err == (
        f"Error: repositories differ: 1 file(s) differ, 0 only in {expected}, 0 only in {actual}; "
        "models affected: Shout; if ACTUAL is right, rerun with --update\n"
    )
    code, out, _ = invoke(expected, actual, "--update")
    assert code == 0
    assert out.startswith(f"Updated {expected} from {actual} (repositories differ: 1 file(s) differ")
    assert "TYPE_INT32" in (expected / "Shout" / "config.pbtxt").read_text()
    assert invoke(expected, actual)[0] == 0
    assert invoke(expected, actual, "--update")[1] == f"{expected} already matches {actual}; nothing to update\n"


def test_payloads_are_compared_by_sha256_and_named_by_model(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    payload = actual / "AddSub" / "1" / "model.pkl"
    payload.write_bytes(payload.read_bytes() + b".")
    code, out, err = invoke(expected, actual)
    assert code == 1
    old = hashlib.sha256((expected / "AddSub" / "1" / "model.pkl").read_bytes()).hexdigest()
    new = hashlib.sha256(payload.read_bytes()).hexdigest()
    assert out == (
        f"binary file differs: AddSub/1/model.pkl (model AddSub's payload): sha256 {old} in {expected}, "
        f"{new} in {actual}\n"
    )
    assert "models affected: AddSub; payloads differ: AddSub;" in err


def test_files_on_one_side_only(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    (expected / "Shout" / "1" / "repogen" / "runtime" / "errors.py").unlink()
    (actual / "AddSub" / "1" / "model.json").unlink()
    code, out, err = invoke(expected, actual)
    assert code == 1
    assert f"only in {expected}: AddSub/1/model.json\n" in out
    assert f"only in {actual}: Shout/1/repogen/runtime/errors.py\n" in out
    assert f"0 file(s) differ, 1 only in {expected}, 1 only in {actual}; models affected: AddSub, Shout" in err


def test_update_creates_a_missing_expected(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path / "golden" / "repo", QUICKSTART, "--update")
    assert code == 0
    assert out.endswith(" (created)\n")
    assert invoke(tmp_path / "golden" / "repo", QUICKSTART)[0] == 0


def test_update_refuses_to_replace_a_directory_that_is_not_a_repository(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("important")
    code, _, err = invoke(project, QUICKSTART, "--update")
    assert code == 1
    assert f"Error: refusing to replace {project}: it does not look like a model repository" in err
    assert (project / "app.py").read_text() == "important"


def test_missing_expected_without_update(tmp_path: Path) -> None:
    code, _, err = invoke(tmp_path / "nowhere", QUICKSTART)
    assert code == 1
    assert f"Error: {tmp_path / 'nowhere'} is not a directory; expected a model repository" in err


# --------------------------------------------------------------------------- repogen.testing.golden


def test_golden_helper_raises_with_the_diff_and_the_hint(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    assert_repository_matches(expected, actual)
    change_dtype(actual)
    with pytest.raises(AssertionError) as raised:
        assert_repository_matches(expected, actual, hint="run `make golden`")
    message = str(raised.value)
    assert "+  data_type: TYPE_INT32" in message
    assert "models affected: Shout" in message
    assert message.endswith("run `make golden`")


def test_golden_helper_default_advice_and_update(pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    expected, actual = pair
    change_dtype(actual)
    with pytest.raises(AssertionError, match="rerun with REPOGEN_UPDATE_GOLDEN=1"):
        assert_repository_matches(expected, actual)
    monkeypatch.setenv("REPOGEN_UPDATE_GOLDEN", "1")
    assert_repository_matches(expected, actual)
    monkeypatch.delenv("REPOGEN_UPDATE_GOLDEN")
    assert_repository_matches(expected, actual)
    assert "TYPE_INT32" in (expected / "Shout" / "config.pbtxt").read_text()


def test_golden_helper_update_argument_and_missing_expected(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="does not exist"):
        assert_repository_matches(tmp_path / "golden", QUICKSTART)
    assert_repository_matches(tmp_path / "golden", QUICKSTART, update=True)
    assert_repository_matches(tmp_path / "golden", QUICKSTART)


def test_long_text_diffs_are_cut_in_assertions(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    model_py = actual / "AddSub" / "1" / "model.py"
    model_py.write_text("\n".join(f"line {i}" for i in range(500)))
    with pytest.raises(AssertionError, match=r"\.\.\. \(\d+ more line\(s\) of this diff\)"):
        assert_repository_matches(expected, actual)
