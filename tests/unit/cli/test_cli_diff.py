"""``repogen diff`` and ``repogen.testing.golden``: golden-file comparison of two repositories."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.cli import cli
from repogen.ondisk.diff import excluded, pickle_listing
from repogen.ondisk.reader import files
from repogen.testing.golden import assert_repository_matches, update_golden

ROOT = Path(__file__).resolve().parents[3]
# A generated repository, checked in without the vendored code (the manifest records its hashes).
QUICKSTART = ROOT / "tests" / "golden" / "quickstart" / "expected"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart as `repogen build` writes it today: vendored cloudpickle and runtime included."""
    output = tmp_path_factory.mktemp("fresh") / "quickstart"
    subprocess.run(
        [sys.executable, "-m", "repogen", "build", "examples/quickstart/app.py:models", "-o", str(output)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return output


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    expected, actual = tmp_path / "expected", tmp_path / "actual"
    shutil.copytree(QUICKSTART, expected)
    shutil.copytree(QUICKSTART, actual)
    return expected, actual


@pytest.fixture
def golden_and_build(tmp_path: Path, fresh: Path) -> tuple[Path, Path]:
    """A copy of the checked-in golden (no vendored code) and of a fresh build (with it)."""
    expected, actual = tmp_path / "golden", tmp_path / "build"
    shutil.copytree(QUICKSTART, expected)
    shutil.copytree(fresh, actual)
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


def test_payloads_are_compared_by_sha256_and_shown_disassembled(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    payload = actual / "AddSub" / "1" / "model.pkl"
    data = payload.read_bytes()
    assert data.count(b"add_sub") == 3  # __name__, __qualname__ and the code reference: same length, valid pickle
    payload.write_bytes(data.replace(b"add_sub", b"add_sup"))
    code, out, err = invoke(expected, actual)
    assert code == 1
    old = hashlib.sha256((expected / "AddSub" / "1" / "model.pkl").read_bytes()).hexdigest()
    new = hashlib.sha256(payload.read_bytes()).hexdigest()
    assert out.startswith(
        f"binary file differs: AddSub/1/model.pkl (model AddSub's payload): sha256 {old} in {expected}, "
        f"{new} in {actual}\n--- {expected}/AddSub/1/model.pkl\n+++ {actual}/AddSub/1/model.pkl\n@@ "
    )
    assert "\n-  SHORT_BINUNICODE 'add_sub'\n+  SHORT_BINUNICODE 'add_sup'\n" in out
    assert "models affected: AddSub; payloads differ: AddSub;" in err


def test_bytes_after_the_pickle_are_reported_without_a_listing_diff(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    payload = actual / "AddSub" / "1" / "model.pkl"
    payload.write_bytes(payload.read_bytes() + b".")
    code, out, _ = invoke(expected, actual)
    assert code == 1
    assert out.endswith(
        "\n(the disassembly is the same: the bytes differ outside the pickle's opcodes or in framing)\n"
    )


def test_pickle_listing_names_what_memo_references_point_at() -> None:
    listing = pickle_listing((QUICKSTART / "AddSub" / "1" / "model.pkl").read_bytes())
    assert listing[0] == "PROTO 4"
    assert listing[-1] == "STOP"
    assert not any(line.lstrip().startswith("FRAME") for line in listing)  # framing depends on sizes only
    assert "  BINGET 'add_sub'" in listing  # a memoized string: its value
    assert "  BINGET 'repogen.runtime.portable'" in listing
    assert "  MEMOIZE obj#9" in listing and "  BINGET obj#9" in listing  # an object: its place among objects
    assert pickle_listing(b"\x80\x04K")[-1].startswith("(cannot read further: ")


def test_files_on_one_side_only(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    (expected / "Shout" / "1" / "sources" / "app.py").unlink()
    (actual / "AddSub" / "1" / "model.json").unlink()
    code, out, err = invoke(expected, actual)
    assert code == 1
    assert f"only in {expected}: AddSub/1/model.json\n" in out
    assert f"only in {actual}: Shout/1/sources/app.py\n" in out
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


# --------------------------------------------------------------------------- the project's own goldens


def test_the_projects_golden_matches_a_fresh_build(fresh: Path) -> None:
    """The checked-in golden leaves the vendored code out; its manifest's hashes stand in for it."""
    assert not list(QUICKSTART.glob("*/*/cloudpickle")) and not list(QUICKSTART.glob("*/*/repogen"))
    assert list(fresh.glob("*/1/repogen/runtime/triton_model.py")) and list(fresh.glob("*/1/repogen/__init__.py"))
    assert invoke(QUICKSTART, fresh) == (0, f"{QUICKSTART} and {fresh} are identical\n", "")
    assert invoke(fresh, QUICKSTART)[0] == 0  # the vendored files may be missing from either side


def test_vendored_files_are_checked_against_the_manifest_of_the_side_that_leaves_them_out(
    golden_and_build: tuple[Path, Path],
) -> None:
    expected, actual = golden_and_build
    vendored = actual / "Shout" / "1" / "repogen" / "runtime" / "conversion.py"
    recorded = json.loads((expected / "repogen.manifest.json").read_text())["files"][
        "Shout/1/repogen/runtime/conversion.py"
    ]
    vendored.write_text(vendored.read_text() + "# patched\n")
    runtime = actual / "AddSub" / "1" / "repogen" / "runtime" / "extra.py"
    runtime.write_text("# not in the golden's manifest\n")
    code, out, err = invoke(expected, actual)
    assert code == 1
    found = hashlib.sha256(vendored.read_bytes()).hexdigest()
    assert out == (
        f"only in {actual}: AddSub/1/repogen/runtime/extra.py\n"
        f"vendored file differs: Shout/1/repogen/runtime/conversion.py: sha256 {recorded} in {expected}, {found} in "
        f"{actual} (one side leaves the file out; its manifest records the hash)\n"
    )
    assert "1 file(s) differ (1 vendored, by hash), 0 only in" in err
    assert "models affected: AddSub, Shout" in err


def test_only_vendored_code_is_compared_by_hash(golden_and_build: tuple[Path, Path]) -> None:
    expected, actual = golden_and_build
    (expected / "AddSub" / "1" / "model.py").unlink()  # recorded in the manifest, but it is the build's own output
    code, out, _ = invoke(expected, actual)
    assert code == 1
    assert out == f"only in {actual}: AddSub/1/model.py\n"


def test_exclude_is_repeatable_and_globs_relative_paths(golden_and_build: tuple[Path, Path]) -> None:
    expected, actual = golden_and_build
    change_dtype(actual)
    (actual / "AddSub" / "1" / "model.json").write_text("{}\n")
    (actual / "AddSub" / "1" / "notes.txt").write_text("scratch\n")
    assert invoke(expected, actual)[0] == 1
    code, out, err = invoke(expected, actual, "--exclude", "Shout/config.pbtxt", "--exclude", "*/1/model.json")
    assert code == 1
    assert out == f"only in {actual}: AddSub/1/notes.txt\n"
    code, out, err = invoke(
        expected, actual, "--exclude", "*/config.pbtxt", "--exclude", "model.json", "--exclude", "*.txt"
    )
    assert (code, out, err) == (0, f"{expected} and {actual} are identical\n", "")


def test_exclude_patterns() -> None:
    assert excluded("AddSub/1/cloudpickle/cloudpickle.py", ["*/*/cloudpickle"])  # a directory covers its files
    assert not excluded("AddSub/1/files/cloudpickle/x.py", ["*/*/cloudpickle"])  # anchored: * is one component
    assert excluded("AddSub/1/files/cloudpickle/x.py", ["cloudpickle"])  # no '/': a name at any depth
    assert excluded("AddSub/1/sources/app.py", ["AddSub/**/*.py"]) and excluded("a/b/model.py", ["**/model.py"])
    assert excluded("AddSub/1/model.pkl", ["*.pkl"]) and excluded("AddSub/1/model.pkl", ["*/1/"])
    assert not excluded("AddSub/config.pbtxt", ["*/1"]) and not excluded("AddSub/1/model.py", ["Shout/**"])


def test_update_keeps_what_the_golden_leaves_out(golden_and_build: tuple[Path, Path]) -> None:
    expected, actual = golden_and_build
    change_dtype(actual)
    notes = expected / "AddSub" / "1" / "notes.txt"
    notes.write_text("kept: excluded paths are neither compared nor updated\n")
    code, out, _ = invoke(expected, actual, "--update", "--exclude", "notes.txt")
    assert code == 0, out
    assert "TYPE_INT32" in (expected / "Shout" / "config.pbtxt").read_text()
    assert notes.is_file()
    assert not list(expected.glob("*/*/cloudpickle")) and not list(expected.glob("*/*/repogen"))
    assert invoke(expected, actual, "--exclude", "notes.txt")[0] == 0


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


def test_a_comparison_never_writes_the_golden(pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Only update_golden (``make golden``, ``repogen diff --update``) writes: no environment turns a failed
    comparison into a rewrite that passes (REPOGEN_UPDATE_GOLDEN once did)."""
    expected, actual = pair
    change_dtype(actual)
    before = {path: source.read_bytes() for path, source in files(expected).items()}
    monkeypatch.setenv("REPOGEN_UPDATE_GOLDEN", "1")
    for parsed in (False, True):
        with pytest.raises(AssertionError, match=r"update the golden with `repogen diff .* --update`"):
            assert_repository_matches(expected, actual, parsed=parsed)
    assert {path: source.read_bytes() for path, source in files(expected).items()} == before
    update_golden(expected, actual)
    assert "TYPE_INT32" in (expected / "Shout" / "config.pbtxt").read_text()
    assert_repository_matches(expected, actual)


def test_update_golden_creates_a_missing_one(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="does not exist; create it with `repogen diff "):
        assert_repository_matches(tmp_path / "golden", QUICKSTART)
    assert not (tmp_path / "golden").exists()
    update_golden(tmp_path / "golden", QUICKSTART)
    assert_repository_matches(tmp_path / "golden", QUICKSTART)


def test_long_text_diffs_are_cut_in_assertions(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    model_py = actual / "AddSub" / "1" / "model.py"
    model_py.write_text("\n".join(f"line {i}" for i in range(500)))
    with pytest.raises(AssertionError, match=r"\.\.\. \(\d+ more line\(s\) of this diff\)"):
        assert_repository_matches(expected, actual)


# --------------------------------------------------------------------------- parsed comparison


def _with_build(repo: Path, **build: str) -> None:
    """Pretend another environment built ``repo``: the records change, and so does every payload."""
    for path in [repo / "repogen.manifest.json", *repo.glob("*/1/model.json")]:
        data = json.loads(path.read_text())
        data["build"].update(build)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    for payload in repo.glob("*/1/model.pkl"):
        payload.write_bytes(payload.read_bytes() + b".")


def test_parsed_comparison_ignores_the_build_environment_and_formatting(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    _with_build(actual, python="3.13", numpy="2.5.5")
    config = actual / "AddSub" / "config.pbtxt"
    config.write_text(config.read_text().replace("\n", "\n\n"))  # the same message, printed differently
    with pytest.raises(AssertionError):
        assert_repository_matches(expected, actual)
    assert_repository_matches(expected, actual, parsed=True, exclude=("*.pkl",))  # payloads checked elsewhere


def test_parsed_comparison_reports_fields_and_keys(pair: tuple[Path, Path]) -> None:
    expected, actual = pair
    change_dtype(actual)
    metadata = actual / "AddSub" / "1" / "model.json"
    data = json.loads(metadata.read_text())
    data["calls"] = ["Shout"]
    del data["strict"]
    metadata.write_text(json.dumps(data))
    with pytest.raises(AssertionError) as raised:
        assert_repository_matches(expected, actual, parsed=True)
    message = str(raised.value)
    assert 'Shout/config.pbtxt (parsed as ModelConfig):\n  output[1].data_type: "TYPE_INT64" -> "TYPE_INT32"\n' in (
        message
    )
    assert 'AddSub/1/model.json (parsed as JSON):\n+ calls[0]: "Shout"\n- strict: true\n' in message
    assert "repogen.manifest.json" not in message  # the hashes of files compared themselves are not compared again


def test_a_payload_that_differs_fails_whatever_environment_built_it(pair: tuple[Path, Path]) -> None:
    """Never accepted silently: between environments, a changed payload cannot be told from a changed source."""
    expected, actual = pair
    payload = actual / "Shout" / "1" / "model.pkl"
    payload.write_bytes(payload.read_bytes() + b".")
    with pytest.raises(AssertionError, match="payloads differ: Shout"):
        assert_repository_matches(expected, actual, parsed=True)
    _with_build(actual, python="3.10")
    with pytest.raises(AssertionError) as raised:
        assert_repository_matches(expected, actual, parsed=True)
    message = str(raised.value)
    assert "Shout/1/model.pkl: payload differs, and the two builds ran in different environments (expected: " in message
    assert '"python": "3.10"' in message and "payloads differ: AddSub, Shout" in message
    assert_repository_matches(expected, actual, parsed=True, exclude=("*.pkl",))  # left out on purpose: passes
