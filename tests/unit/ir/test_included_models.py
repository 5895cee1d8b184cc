"""``models.include``: an existing model directory taken in as it is, its config checked with repogen's schema.

Served (a hand-written Python-backend model, called directly and through BLS) in
tests/integration/test_onnx_models.py; the golden family tests/golden/included keeps what it writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, Repository, Tensor, build_repository
from repogen.ir import lower

HANDMADE = Path(__file__).resolve().parents[3] / "tests" / "apps" / "onnx" / "handmade"
X = Tensor(name="x", dtype=np.float32, shape=(-1,))


@pytest.fixture
def handmade(tmp_path: Path) -> Path:
    return Path(shutil.copytree(HANDMADE, tmp_path / "handmade"))


def _with_config(directory: Path, extra: str = "", name: str = "Handmade") -> Path:
    text = (directory / "config.pbtxt").read_text().replace('name: "Handmade"', f'name: "{name}"')
    (directory / "config.pbtxt").write_text(text + extra)
    return directory


def test_the_directory_is_copied_as_it_is_and_hashed(handmade: Path, tmp_path: Path) -> None:
    (handmade / "1" / "__pycache__").mkdir()
    (handmade / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"left by a server")
    models = Repository()
    model = models.include("Handmade", handmade)

    @models.model("Caller", inputs=[X], outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
                  config=ModelConfig(max_batch_size=0))  # fmt: skip
    def caller(requests):
        return [model(x=r["x"]) for r in requests]

    spec = lower(models)
    (included,) = spec.included
    assert [relative for relative, _ in included.files] == ["1/model.py", "config.pbtxt"]  # no __pycache__
    (client,) = spec.model("Caller").versions[0].clients
    assert (client.model, client.input_types, client.outputs) == ("Handmade", (("x", "TYPE_FP32"),), ("y",))
    out = tmp_path / "repo"
    build_repository(models, out)
    for relative in ("config.pbtxt", "1/model.py"):
        assert (out / "Handmade" / relative).read_bytes() == (HANDMADE / relative).read_bytes()
    manifest = json.loads((out / "repogen.manifest.json").read_text())
    assert {"Handmade/config.pbtxt", "Handmade/1/model.py"} <= set(manifest["files"])
    assert manifest["models"] == ["Caller", "Handmade"]


def test_a_field_the_targeted_releases_do_not_know_is_named(handmade: Path, tmp_path: Path) -> None:
    models = Repository()
    models.include("Handmade", _with_config(handmade, 'runtime: "model.py"\n'))
    with pytest.raises(BuildError) as caught:
        build_repository(models, tmp_path / "all")
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        f"model 'Handmade' (included from {handmade}): its config.pbtxt sets 'runtime' (inference.ModelConfig."
        "runtime), introduced in Triton 24.01; the targeted NGC 23.10 (tritonserver 2.39.0) rejects the whole "
        "model. Remove it, or build for newer containers only (--triton-release 24.01 or newer)"
    )
    build_repository(models, tmp_path / "newer", triton_release="24.10")  # a 24.10 container knows it


def test_a_field_newer_than_the_target_is_refused_naming_both(handmade: Path, tmp_path: Path) -> None:
    models = Repository()
    models.include("Handmade", _with_config(handmade, "model_metrics {\n}\n"))
    with pytest.raises(BuildError) as caught:
        build_repository(models, tmp_path / "old", triton_release="24.10")
    assert (
        "sets 'model_metrics' (inference.ModelConfig.model_metrics), introduced in Triton 24.11; the targeted "
        "NGC 24.10 (tritonserver 2.51.0) rejects the whole model" in str(caught.value)
    )
    build_repository(models, tmp_path / "new", triton_release="26.11")  # a 26.11 container knows it


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "max_batch_sise: 4\n",
            "config.pbtxt sets 'max_batch_sise' (inference.ModelConfig.max_batch_sise), which is not in Triton's "
            "ModelConfig schema up to r26.07, the newest repogen knows (check the spelling)",
        ),
    ],
)
def test_a_config_the_server_could_not_parse_fails_the_build(handmade: Path, extra: str, message: str) -> None:
    models = Repository()
    models.include("Handmade", _with_config(handmade, extra))
    with pytest.raises(BuildError) as caught:
        lower(models)
    assert str(caught.value).startswith(f"{caught.value.site}: model 'Handmade' (included from {handmade}): {message}")


def test_name_layout_and_fuse_are_checked(handmade: Path, tmp_path: Path) -> None:
    models = Repository()
    models.include("Renamed", handmade)
    with pytest.raises(BuildError, match="names the model 'Handmade', but it is included as 'Renamed'"):
        lower(models)
    models = Repository()
    models.include("Nothing", tmp_path / "nowhere")
    with pytest.raises(BuildError, match=r"model 'Nothing' \(included from .*nowhere\): no config.pbtxt there"):
        lower(models)
    shutil.rmtree(handmade / "1")
    models = Repository()
    models.include("Handmade", handmade)
    with pytest.raises(BuildError, match="has no numeric version directory"):
        lower(models)
    (handmade / "1").mkdir()
    models = Repository()
    step = models.include("Handmade", handmade)

    @models.ensemble("Pipeline", inputs=[X], outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
                     config=ModelConfig(max_batch_size=0), fuse=True)  # fmt: skip
    def pipeline(x):
        return {"y": step(x=x)["y"]}

    with pytest.raises(BuildError, match=r"step 'Handmade' is an included model directory \(python\), not a Python"):
        lower(models)
