"""The release table, ``--triton-version`` (``--target-triton``) on build, the early interpreter check and
what the build records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.cli import cli
from repogen.errors import BuildError, RepogenError, UnknownReleaseError
from repogen.ondisk.validate import validate_repository
from repogen.triton.releases import EMBEDDED, RELEASES, Release, get_release
from repogen.triton.targets import TARGETS, TritonTarget, check_interpreter, current_python, get_target, resolve_targets


@pytest.mark.parametrize(
    "key", ["24.10", "r24.10", "24.10-py3", "2.51.0", "2.51", "v2.51.0", "nvcr.io/nvidia/tritonserver:24.10-py3"]
)
def test_every_spelling_finds_24_10(key):
    target = get_target(key)
    assert (target.ngc, target.tritonserver, target.python, target.numpy) == ("24.10", "2.51.0", "3.10", "1.26.4")
    assert target.image == "nvcr.io/nvidia/tritonserver:24.10-py3"


def test_table_covers_every_monthly_release_from_23_10():
    assert TARGETS is RELEASES and TritonTarget is Release
    first = TARGETS[0]
    assert (first.ngc, first.tritonserver, first.python, first.numpy) == ("23.10", "2.39.0", "3.10", "1.26.4")
    assert [t.tritonserver for t in TARGETS] == [f"2.{39 + i}.0" for i in range(len(TARGETS))]
    assert (TARGETS[-1].ngc, TARGETS[-1].tritonserver) == ("25.10", "2.63.0")
    assert get_target("24.12").python == get_target("25.10").python == "3.12"
    assert get_target("24.11").python == "3.10"
    assert [r.version for r in TARGETS] == sorted(r.version for r in TARGETS)


def test_wheels_ride_on_their_release_rows():
    assert [(r.tritonserver, r.ngc) for r in EMBEDDED] == [
        ("2.39.0", "23.10"),
        ("2.41.0", "23.12"),
        ("2.51.0", "24.10"),
    ]
    assert all(r.wheel and r.wheel.filename.startswith(f"nvidia_pytriton-{r.wheel.pytriton}-") for r in EMBEDDED)
    assert get_release("2.51").stub_pythons[-2:] == ("3.12", "3.13") and get_release("24.11").stub_pythons == ()
    assert get_release("24.11").wheel is None


@pytest.mark.parametrize("key", ["23.09", "2.38.0", "24.13", "latest", ""])
def test_unknown_release_names_the_range(key):
    message = r"unknown Triton release .* from 23\.10 to 25\.10 \(e\.g\. 24\.10\)"
    with pytest.raises(BuildError, match=message):
        get_target(key)
    with pytest.raises(UnknownReleaseError, match=message) as raised:
        get_release(key)
    assert isinstance(raised.value, RepogenError) and isinstance(raised.value, LookupError)


def test_interpreter_mismatch_says_what_to_do():
    with pytest.raises(BuildError) as info:
        check_interpreter(get_target("24.10"), python="3.11")
    message = str(info.value)
    for part in (
        "--target-triton 24.10",
        "tritonserver 2.51.0",
        "Python 3.10",
        "this --pin-python build runs on Python 3.11",
        "Drop --pin-python",
        "any Python from 3.10",
        "build with a Python 3.10 interpreter",
        "nvcr.io/nvidia/tritonserver:24.10-py3",
    ):
        assert part in message
    check_interpreter(get_target("24.12"), python="3.12")  # a match passes


def test_cli_fails_before_importing_the_app(tmp_path, monkeypatch):
    monkeypatch.setattr("repogen.triton.targets.current_python", lambda: "3.9")
    app = tmp_path / "app.py"
    app.write_text("raise SystemExit('the app must not be imported')\nmodels = None\n")
    result = CliRunner().invoke(
        cli, ["build", f"{app}:models", "-o", str(tmp_path / "out"), "--target-triton", "24.10", "--pin-python"]
    )
    assert result.exit_code == 1, result.output
    assert "serves models with Python 3.10, but this --pin-python build runs on Python 3.9" in result.output
    assert not (tmp_path / "out").exists()


def _models() -> Repository:
    models = Repository()

    @models.model(
        "Double",
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=4),
    )
    @batch
    def double(x):
        return {"y": x * 2}

    return models


def test_target_is_recorded_in_model_json_and_manifest(tmp_path):
    target = TritonTarget("24.10", "2.51.0", current_python(), "1.26.4")  # a container matching this interpreter
    repo = tmp_path / "repo"
    build_repository(_models(), repo, target_triton=target)
    record = {
        "image": "nvcr.io/nvidia/tritonserver:24.10-py3",
        "ngc": "24.10",
        "numpy": "1.26.4",
        "python": current_python(),
        "tritonserver": "2.51.0",
    }
    assert json.loads((repo / "Double" / "1" / "model.json").read_text())["target"] == record
    assert json.loads((repo / "repogen.manifest.json").read_text())["target"] == record
    assert validate_repository(repo) == []  # the manifest's hashes cover the stamped model.json


def test_without_a_target_nothing_is_recorded(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_models(), repo)
    assert "target" not in json.loads((repo / "Double" / "1" / "model.json").read_text())
    assert "target" not in json.loads(Path(repo / "repogen.manifest.json").read_text())


def test_library_refuses_a_mismatched_target_for_a_pinned_build(tmp_path):
    other = "3.10" if current_python() != "3.10" else "3.12"
    target = TritonTarget("24.10", "2.51.0", other, "1.26.4")
    with pytest.raises(BuildError, match=f"this --pin-python build runs on Python {current_python()}"):
        build_repository(_models(), tmp_path / "repo", target_triton=target, pin_python=True)
    assert not (tmp_path / "repo").exists()
    build_repository(_models(), tmp_path / "repo", target_triton=target)  # portable: any builder Python
    meta = json.loads((tmp_path / "repo" / "Double" / "1" / "model.json").read_text())
    assert (meta["portable"], meta["pythons"], meta["target"]["python"]) == (True, [other], other)


def test_targets_default_to_every_container_and_narrow_to_one():
    assert resolve_targets().pythons == ("3.10", "3.12")
    assert resolve_targets("24.10").pythons == ("3.10",)
    assert resolve_targets("25.01").pythons == ("3.12",)
    assert resolve_targets(pin_python=True).pythons == (current_python(),)
    assert resolve_targets().oldest_with("3.11") == get_target("24.12")
    assert resolve_targets().describe("3.10") == "NGC 23.10-24.11 (Python 3.10)"
