"""The release table, ``--triton-release`` on build, the early interpreter check and
what the build records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.cli import cli
from repogen.errors import BuildError, ReleaseAssumedWarning, RepogenError, UnknownReleaseError
from repogen.ondisk.validate import validate_repository
from repogen.triton.releases import EMBEDDED, NEWEST, RELEASES, Release, get_release
from repogen.triton.targets import TARGETS, TritonTarget, check_interpreter, current_python, get_target, resolve_targets


@pytest.mark.parametrize(
    "key", ["24.10", "r24.10", "24.10-py3", "2.51.0", "2.51", "v2.51.0", "nvcr.io/nvidia/tritonserver:24.10-py3"]
)
def test_every_spelling_finds_24_10(key):
    target = get_target(key)
    assert (target.ngc, target.tritonserver, target.python, target.numpy) == ("24.10", "2.51.0", "3.10", "1.26.4")
    assert target.image == "nvcr.io/nvidia/tritonserver:24.10-py3"


def _month(ngc: str) -> int:
    year, month = ngc.split(".")
    return int(year) * 12 + int(month)


def test_table_covers_every_monthly_release_from_23_10():
    assert TARGETS is RELEASES and TritonTarget is Release
    first = TARGETS[0]
    assert (first.ngc, first.tritonserver) == ("23.10", "2.39.0")
    assert [_month(r.ngc) for r in TARGETS] == list(range(_month("23.10"), _month(NEWEST.ngc) + 1))
    assert [r.version for r in TARGETS] == sorted({r.version for r in TARGETS})  # increasing, each once
    steps = {b.version[1] - a.version[1] for a, b in zip(TARGETS, TARGETS[1:], strict=False)}
    assert steps <= {0, 1}  # one minor a month, or a patch release (25.07 = 2.59.1)
    assert all(r.version[1] - 39 <= _month(r.ngc) - _month("23.10") for r in TARGETS)
    assert [r.cuda for r in TARGETS] == sorted(r.cuda for r in TARGETS)
    assert all(r.numpy == "1.26.4" and r.numpy_pin in ("", "<2") and not r.assumed for r in TARGETS)


def test_python_and_glibc_follow_the_ubuntu_of_each_image():
    by_ubuntu = {r.ubuntu: (r.python, r.glibc) for r in RELEASES}
    assert by_ubuntu == {"22.04": ("3.10", "2.35"), "24.04": ("3.12", "2.39")}
    switch = next(r for r in RELEASES if r.ubuntu == "24.04")
    assert all((r.ubuntu == "24.04") == (r.version >= switch.version) for r in RELEASES)
    assert get_release("24.11") is switch  # Triton's build.py at v2.52.0 builds on ubuntu:24.04


def test_wheels_ride_on_their_release_rows():
    assert [(r.tritonserver, r.ngc) for r in EMBEDDED] == [
        ("2.39.0", "23.10"),
        ("2.41.0", "23.12"),
        ("2.51.0", "24.10"),
    ]
    assert all(r.wheel and r.wheel.filename.startswith(f"nvidia_pytriton-{r.wheel.pytriton}-") for r in EMBEDDED)
    assert all(r.python in r.stub_pythons for r in EMBEDDED)
    assert get_release("2.51").stub_pythons[-2:] == ("3.12", "3.13") and get_release("24.11").stub_pythons == ()
    assert get_release("24.11").wheel is None


def test_a_major_minor_spelling_means_the_x_0_release():
    patched = next(r for r in RELEASES if not r.tritonserver.endswith(".0"))
    major_minor = patched.tritonserver.rsplit(".", 1)[0]
    assert get_release(major_minor).tritonserver == f"{major_minor}.0"
    assert get_release(patched.tritonserver) is patched


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("23.09", "older than NGC 23.10"),
        ("2.38.0", "older than tritonserver 2.39.0"),
        ("24.13", "no such month"),
        ("2.51.1", "no NGC release shipped that tritonserver version"),
        ("latest", ""),
        ("", ""),
    ],
)
def test_what_cannot_be_a_release_is_refused_naming_the_range(key, why):
    message = (
        rf"unknown Triton release .*{why}.*; expected an NGC release from 23\.10 on \(the table reaches {NEWEST.ngc}"
    )
    with pytest.raises(BuildError, match=message):
        get_target(key)
    with pytest.raises(UnknownReleaseError, match=message) as raised:
        get_release(key)
    assert isinstance(raised.value, RepogenError) and isinstance(raised.value, LookupError)


def _ahead(months: int) -> str:
    total = _month(NEWEST.ngc) - 1 + months
    return f"{total // 12:02d}.{total % 12 + 1:02d}"


@pytest.mark.parametrize("months", [1, 14])
def test_a_release_newer_than_the_table_is_assumed_like_the_newest_with_one_warning(months):
    name = _ahead(months)
    with pytest.warns(ReleaseAssumedWarning) as caught:
        release = get_release(name)
    (warning,) = caught
    server = f"2.{NEWEST.version[1] + months}.0"
    assert (release.ngc, release.tritonserver, release.assumed, release.wheel) == (name, server, True, None)
    assert (release.python, release.glibc, release.numpy, release.cuda) == (
        NEWEST.python, NEWEST.glibc, NEWEST.numpy, NEWEST.cuda
    )  # fmt: skip
    text = str(warning.message)
    assert text.startswith(f"tritonserver {server} (NGC {name}) is newer than repogen's release table (newest: ")
    for part in (f"Python {NEWEST.python}", f"glibc {NEWEST.glibc}", f"numpy {NEWEST.numpy}", f"CUDA {NEWEST.cuda}"):
        assert part in text
    assert f"docker run --rm nvcr.io/nvidia/tritonserver:{name}-py3 python3 -c" in text
    with pytest.warns(ReleaseAssumedWarning):
        assert get_release(server).ngc == name  # the tritonserver version names the same month


def test_a_build_for_a_future_release_warns_once_and_targets_its_assumed_python(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(
        "import numpy as np\nfrom repogen import Repository, Tensor, ModelConfig\nmodels = Repository()\n"
        "X = [Tensor(name='x', dtype=np.float32, shape=(-1,))]\n"
        "models.bind('M', infer_func=lambda rs: rs, inputs=X, outputs=X, config=ModelConfig(batching=False))\n"
    )
    name = _ahead(2)
    result = CliRunner().invoke(cli, ["build", f"{app}:models", "-o", str(tmp_path / "out"), "--triton-release", name])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1 and f"(NGC {name}) is newer than repogen's release table" in warnings[0], result.stderr
    target = json.loads((tmp_path / "out" / "M" / "1" / "model.json").read_text())["target"]
    assert (target["ngc"], target["python"], target["numpy"]) == (name, NEWEST.python, NEWEST.numpy)
    assert (target["cuda"], target["glibc"], target["assumed"]) == (NEWEST.cuda, NEWEST.glibc, True)
    assert json.loads((tmp_path / "out" / "repogen.manifest.json").read_text())["pythons"] == [NEWEST.python]


def test_interpreter_mismatch_says_what_to_do():
    with pytest.raises(BuildError) as info:
        check_interpreter(get_target("24.10"), python="3.11")
    message = str(info.value)
    for part in (
        "--triton-release 24.10",
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
        cli, ["build", f"{app}:models", "-o", str(tmp_path / "out"), "--triton-release", "24.10", "--pin-python"]
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
    target = dataclasses.replace(get_release("24.10"), python=current_python())  # a container matching this Python
    repo = tmp_path / "repo"
    build_repository(_models(), repo, triton_release=target)
    record = {
        "cuda": 12,
        "glibc": "2.35",
        "image": "nvcr.io/nvidia/tritonserver:24.10-py3",
        "ngc": "24.10",
        "numpy": "1.26.4",
        "python": current_python(),
        "tritonserver": "2.51.0",
    }
    assert json.loads((repo / "Double" / "1" / "model.json").read_text())["target"] == record
    assert json.loads((repo / "repogen.manifest.json").read_text())["target"] == record
    assert [p for p in validate_repository(repo) if not p.warning] == []  # hashes cover the stamped model.json


def test_without_a_target_nothing_is_recorded(tmp_path):
    repo = tmp_path / "repo"
    build_repository(_models(), repo)
    assert "target" not in json.loads((repo / "Double" / "1" / "model.json").read_text())
    assert "target" not in json.loads(Path(repo / "repogen.manifest.json").read_text())


def test_library_refuses_a_mismatched_target_for_a_pinned_build(tmp_path):
    other = "3.10" if current_python() != "3.10" else "3.12"
    target = dataclasses.replace(get_release("24.10"), python=other)
    with pytest.raises(BuildError, match=f"this --pin-python build runs on Python {current_python()}"):
        build_repository(_models(), tmp_path / "repo", triton_release=target, pin_python=True)
    assert not (tmp_path / "repo").exists()
    build_repository(_models(), tmp_path / "repo", triton_release=target)  # portable: any builder Python
    meta = json.loads((tmp_path / "repo" / "Double" / "1" / "model.json").read_text())
    assert (meta["portable"], meta["pythons"], meta["target"]["python"]) == (True, [other], other)


def test_targets_default_to_every_container_and_narrow_to_one():
    assert resolve_targets().pythons == ("3.10", "3.12")
    assert resolve_targets().containers == RELEASES
    assert resolve_targets("24.10").pythons == ("3.10",)
    assert resolve_targets("25.01").pythons == ("3.12",)
    assert resolve_targets(pin_python=True).pythons == (current_python(),)
    first_312 = next(r for r in RELEASES if r.python == "3.12")
    assert resolve_targets().oldest_with("3.11") == first_312
    last_310 = [r for r in RELEASES if r.python == "3.10"][-1]
    assert resolve_targets().describe("3.10") == f"NGC 23.10-{last_310.ngc} (Python 3.10)"
    assert (
        resolve_targets().span()
        == f"NGC 23.10-{last_310.ngc} (Python 3.10), {first_312.ngc}-{NEWEST.ngc} (Python 3.12)"
    )


def test_the_newest_release_of_a_cuda_major_is_read_from_the_table():
    from repogen.triton.releases import newest_with_cuda

    assert newest_with_cuda(12).ngc == "25.07" and newest_with_cuda(12, "3.10").ngc == "24.10"
    assert newest_with_cuda(13).ngc == NEWEST.ngc
    assert newest_with_cuda(13, "3.10") is None and newest_with_cuda(11) is None
