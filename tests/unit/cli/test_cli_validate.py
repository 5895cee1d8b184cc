"""``repogen validate``: exit codes and the messages users act on."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repogen.build import build_app
from repogen.cli import cli
from repogen.ondisk.validate import validate_repository
from repogen.triton.releases import NEWEST

ROOT = Path(__file__).resolve().parents[3]

PYTHON_MODEL = """name: "{name}"
backend: "python"
max_batch_size: 8
input {{ name: "x" data_type: TYPE_FP32 dims: [ -1 ] }}
output {{ name: "y" data_type: TYPE_FP32 dims: [ -1 ] }}
instance_group {{ count: 1 kind: KIND_CPU }}
"""

ENSEMBLE = """name: "Pipeline"
platform: "ensemble"
max_batch_size: 8
input { name: "raw" data_type: TYPE_FP32 dims: [ -1 ] }
output { name: "result" data_type: TYPE_FP32 dims: [ -1 ] }
ensemble_scheduling {
  step { model_name: "Pre" model_version: -1
         input_map { key: "x" value: "raw" } output_map { key: "y" value: "mid" } }
  step { model_name: "Post" model_version: -1
         input_map { key: "x" value: "mid" } output_map { key: "y" value: "result" } }
}
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def python_model(name: str, config: str | None = None) -> dict[str, str]:
    return {f"{name}/config.pbtxt": config or PYTHON_MODEL.format(name=name), f"{name}/1/model.py": "# stub\n"}


def ensemble_repo(root: Path, ensemble: str = ENSEMBLE) -> Path:
    (root / "Pipeline" / "1").mkdir(parents=True)
    return write(root, {**python_model("Pre"), **python_model("Post"), "Pipeline/config.pbtxt": ensemble})


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["validate", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def quickstart(tmp_path: Path) -> Path:
    out = tmp_path / "quickstart"
    build_app(str(ROOT / "examples" / "quickstart" / "app.py") + ":models", out)
    return out


# --------------------------------------------------------------------------- clean repositories


def test_generated_quickstart_is_clean(quickstart: Path) -> None:
    code, out, err = run(str(quickstart))
    assert (code, err) == (0, "")
    assert "no problems" in out


def test_hand_written_ensemble_is_clean(tmp_path: Path) -> None:
    assert validate_repository(ensemble_repo(tmp_path)) == []


# --------------------------------------------------------------------------- config.pbtxt parsing


def test_field_from_a_newer_release_names_field_release_file_and_line(tmp_path: Path) -> None:
    config = PYTHON_MODEL.format(name="M") + "model_metrics { }\n"
    write(tmp_path, python_model("M", config))
    assert run(str(tmp_path))[0] == 0  # a hand-written repository is checked against the newest release
    code, out, err = run(str(tmp_path), "--triton-release", "24.10")
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"Error: {tmp_path / 'M' / 'config.pbtxt'}:7: ")
    assert "'model_metrics' (inference.ModelConfig.model_metrics)" in lines[0]
    assert "introduced in Triton 24.11" in lines[0]
    assert "24.10 (tritonserver 2.51.0) rejects the whole model" in lines[0]


def test_nested_field_from_a_newer_release(tmp_path: Path) -> None:
    ensemble = ENSEMBLE.replace("ensemble_scheduling {", "ensemble_scheduling {\n  max_inflight_requests: 4")
    ensemble_repo(tmp_path, ensemble)
    assert run(str(tmp_path), "--triton-release", "25.11")[0] == 0
    code, _, err = run(str(tmp_path), "--triton-release", "25.10")
    assert code == 1
    assert "Pipeline/config.pbtxt:7: sets 'max_inflight_requests'" in err
    assert "(inference.ModelEnsembling.max_inflight_requests), introduced in Triton 25.11" in err


def test_unknown_field_is_named_as_a_likely_typo(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="M").replace("max_batch_size", "max_batch_sise")))
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "config.pbtxt:3: unknown field 'max_batch_sise' in inference.ModelConfig" in err
    assert "Check the spelling" in err


def test_other_syntax_errors_keep_protobufs_message(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="M").replace("KIND_CPU", "KIND_TPU")))
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "config.pbtxt:6: does not parse as a Triton ModelConfig (r26.07 schema)" in err
    assert "KIND_TPU" in err


def test_release_option_flags_fields_an_older_server_rejects(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="M") + 'runtime: "model.py"\n'))
    assert run(str(tmp_path))[0] == 0
    code, _, err = run(str(tmp_path), "--triton-release", "23.12")
    assert code == 1
    assert "config.pbtxt:7: sets 'runtime' (inference.ModelConfig.runtime), introduced in Triton 24.01" in err
    assert "23.12 (tritonserver 2.41.0) rejects" in err


def test_every_release_of_the_table_knows_the_schema(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="M") + 'runtime: "model.py"\nmodel_metrics { }\n'))
    code, out, err = run(str(tmp_path), "--triton-release", NEWEST.ngc)
    assert (code, err) == (0, "")
    assert f"checked against Triton {NEWEST.ngc}; config schema r26.07" in out


def test_a_field_newer_than_the_schema_is_a_warning_for_a_release_newer_than_the_table(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="M") + "model_priority: 2\n"))
    assert run(str(tmp_path), "--triton-release", NEWEST.ngc)[0] == 1  # unknown to every release repogen knows
    code, out, err = run(str(tmp_path), "--triton-release", "27.01")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("Warning: tritonserver 2.77.0 (NGC 27.01) is newer than repogen's release table")
    assert lines[1].startswith(f"Warning: {tmp_path / 'M' / 'config.pbtxt'}:7: field 'model_priority'")
    assert "the requested release 27.01 (tritonserver 2.77.0) is newer and may know it" in lines[1]
    assert "the rest of this model's config is not checked" in lines[1]


# --------------------------------------------------------------------------- layout


def test_name_must_match_directory(tmp_path: Path) -> None:
    write(tmp_path, python_model("M", PYTHON_MODEL.format(name="Other")))
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "name is 'Other' but the directory is 'M'" in err
    assert 'set name: "M" or rename the directory' in err


def test_version_directories(tmp_path: Path) -> None:
    write(tmp_path, {"M/config.pbtxt": PYTHON_MODEL.format(name="M"), "M/01/model.py": ""})
    problems = [str(p) for p in validate_repository(tmp_path)]
    assert any("version directory '01' has a leading zero" in p and "rename it to 1" in p for p in problems)
    assert any("model 'M' has no numeric version directory; expected e.g. M/1/" in p for p in problems)


def test_python_model_needs_model_py_unless_default_model_filename(tmp_path: Path) -> None:
    write(tmp_path, {"M/config.pbtxt": PYTHON_MODEL.format(name="M"), "M/1/other.py": ""})
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "python-backend model 'M' version 1 has no model.py; expected M/1/model.py" in err
    config = PYTHON_MODEL.format(name="M") + 'default_model_filename: "other.py"\n'
    write(tmp_path, {"M/config.pbtxt": config})
    assert run(str(tmp_path))[0] == 0


def test_directory_without_config(tmp_path: Path) -> None:
    write(tmp_path, {**python_model("M"), "notes/readme.txt": "hi"})
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert f"Error: {tmp_path / 'notes'}: no config.pbtxt" in err


def test_missing_repository_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path / "nowhere"))
    assert code == 2
    assert "does not exist" in err


# --------------------------------------------------------------------------- ensembles


def test_ensemble_referencing_a_missing_model(tmp_path: Path) -> None:
    ensemble_repo(tmp_path, ENSEMBLE.replace('"Post"', '"Postt"'))
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "step 2 (Postt) references model 'Postt', which is not in the repository" in err
    assert "models here: Pipeline, Post, Pre" in err


def test_ensemble_with_reversed_input_map(tmp_path: Path) -> None:
    ensemble_repo(tmp_path, ENSEMBLE.replace('key: "x" value: "raw"', 'key: "raw" value: "x"'))
    problems = [p.message for p in validate_repository(tmp_path)]
    assert any("input_map key 'raw' is not an input of Pre" in p and "looks reversed" in p for p in problems)
    assert any("does not map Pre's required input 'x'" in p for p in problems)
    assert any("reads tensor 'x', which nothing produces" in p for p in problems)
    assert any("ensemble input 'raw' is not used by any step" in p for p in problems)


def test_ensemble_dtype_mismatch_and_instance_group(tmp_path: Path) -> None:
    ensemble = ENSEMBLE.replace(
        'output { name: "result" data_type: TYPE_FP32', 'output { name: "result" data_type: TYPE_INT32'
    )
    ensemble_repo(tmp_path, ensemble + "instance_group { count: 1 kind: KIND_CPU }\n")
    code, _, err = run(str(tmp_path))
    assert code == 1
    assert "ensemble 'Pipeline': sets instance_group, which ensembles cannot have" in err
    assert (
        "tensor 'result' is TYPE_FP32 (step 2 (Post) output 'y') but ensemble output 'result' expects TYPE_INT32" in err
    )


def test_ensemble_pinning_a_missing_version(tmp_path: Path) -> None:
    ensemble_repo(tmp_path, ENSEMBLE.replace('"Pre" model_version: -1', '"Pre" model_version: 3'))
    problems = [p.message for p in validate_repository(tmp_path)]
    assert any("pins model_version 3, but Pre has versions [1]" in p for p in problems)


# --------------------------------------------------------------------------- manifest and payload hashes


def test_tampered_payload_is_reported(quickstart: Path) -> None:
    payload = quickstart / "AddSub" / "1" / "model.pkl"
    built = payload.read_bytes()
    data = bytearray(built)
    data[len(data) // 2] ^= 0xFF
    payload.write_bytes(bytes(data))
    code, out, err = run(str(quickstart))
    assert code == 1
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert all(line.startswith(f"Error: {payload}: sha256 is ") for line in lines)
    assert any("but model.json expects" in line and "the runtime will refuse" in line for line in lines)
    assert any("but repogen.manifest.json lists" in line for line in lines)
    payload.write_bytes(built)  # as built again: the session's bytecode gate reads every payload left behind


def test_unlisted_and_missing_files_are_reported(quickstart: Path) -> None:
    (quickstart / "Shout" / "1" / "extra.txt").write_text("added by hand")
    (quickstart / "Shout" / "1" / "repogen" / "runtime" / "errors.py").unlink()
    (quickstart / "AddSub" / "1" / "__pycache__").mkdir()
    (quickstart / "AddSub" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"server-written")
    problems = [str(p) for p in validate_repository(quickstart)]
    assert problems == [
        f"{quickstart / 'Shout/1/repogen/runtime/errors.py'}: missing: listed in repogen.manifest.json but not "
        "on disk; rebuild or restore it",
        f"{quickstart / 'Shout/1/extra.txt'}: not listed in repogen.manifest.json: added after the build; "
        "remove it, or rebuild to include it",
    ]
