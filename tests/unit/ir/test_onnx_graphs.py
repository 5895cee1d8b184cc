"""``models.onnx``: tensors read from the graph, declarations checked against it, Triton's layout.

The graphs here are written with repogen's own subset of ONNX's schema (the one the build reads
with, :mod:`repogen.testing.onnx_graphs`), so this module needs neither onnx nor onnxruntime;
``tests/integration/test_onnx_models.py`` serves graphs made with onnx, and ``tests/golden/onnx``
keeps the native configs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repogen import BuildError, DynamicBatcher, InstanceGroup, ModelConfig, Repository, Tensor, build_repository
from repogen.cli import cli
from repogen.errors import GraphMismatchError
from repogen.ir import lower
from repogen.ir import networks as networks_module
from repogen.ir.spec import IOSpec, NetworkSpec
from repogen.ondisk.validate import validate_repository
from repogen.testing.onnx_graphs import FLOAT, INT64, STRING, write_graph


@pytest.fixture
def detection(tmp_path: Path) -> Path:
    return write_graph(
        tmp_path / "detection.onnx",
        [("input_images:0", FLOAT, ["batch", "h", "w", 3])],
        [("scores", FLOAT, ["batch", "h", "w", 1]), ("boxes", FLOAT, ["batch", None, 5])],
        initializers=["W"],
    )


def _network(repo: Repository) -> NetworkSpec:
    (network,) = lower(repo).networks
    return network


def test_tensors_come_from_the_graph_and_the_leading_symbolic_dim_is_the_batch_axis(detection: Path) -> None:
    repo = Repository()
    repo.onnx("text_detection", detection, config=ModelConfig(max_batch_size=4))
    model = _network(repo).model
    assert model.max_batch_size == 4
    assert model.inputs == (IOSpec("input_images:0", "TYPE_FP32", (-1, -1, 3)),)  # W is a weight
    assert model.outputs == (IOSpec("scores", "TYPE_FP32", (-1, -1, 1)), IOSpec("boxes", "TYPE_FP32", (-1, 5)))
    assert model.instance_groups == ()  # Triton's default: one instance per GPU, CPU when none


def test_without_batching_every_dim_stays_and_a_scalar_is_dims_1_reshaped(tmp_path: Path) -> None:
    path = write_graph(tmp_path / "m.onnx", [("x", INT64, [2, "n"]), ("k", INT64, [])], [("y", STRING, ["n"])])
    repo = Repository()
    repo.onnx("M", path, config=ModelConfig(max_batch_size=0))
    model = _network(repo).model
    assert model.inputs == (IOSpec("x", "TYPE_INT64", (2, -1)), IOSpec("k", "TYPE_INT64", (1,), reshape=()))
    assert model.outputs == (IOSpec("y", "TYPE_STRING", (-1,)),)


def test_the_build_writes_triton_s_layout_and_hashes_the_graph(detection: Path, tmp_path: Path) -> None:
    second = write_graph(tmp_path / "v2.onnx", [("input_images:0", FLOAT, ["b", "h", "w", 3])],
                         [("scores", FLOAT, ["b", "h", "w", 1]), ("boxes", FLOAT, ["b", "n", 5])])  # fmt: skip
    repo = Repository()
    config = ModelConfig(max_batch_size=4, batcher=DynamicBatcher(), instance_groups=[InstanceGroup(kind="KIND_GPU")])
    repo.onnx("text_detection", detection, config=config)
    repo.onnx("text_detection", second, config=config, model_version=2)
    out = tmp_path / "repo"
    build_repository(repo, out)
    assert (out / "text_detection" / "1" / "model.onnx").read_bytes() == detection.read_bytes()
    assert (out / "text_detection" / "2" / "model.onnx").read_bytes() == second.read_bytes()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "repogen.manifest.json",
        "sbom.cdx.json",
        "text_detection/1/model.onnx",
        "text_detection/2/model.onnx",
        "text_detection/config.pbtxt",
    ]
    config_text = (out / "text_detection" / "config.pbtxt").read_text()
    assert 'backend: "onnxruntime"' in config_text and "kind: KIND_GPU" in config_text
    assert "version_policy {\n  all {\n  }\n}" in config_text
    manifest = json.loads((out / "repogen.manifest.json").read_text())
    assert manifest["models"] == ["text_detection"]
    assert set(manifest["files"]) >= {"text_detection/1/model.onnx", "text_detection/2/model.onnx"}
    assert validate_repository(out) == []
    inspected = CliRunner().invoke(cli, ["inspect", str(out)])
    assert inspected.exit_code == 0, inspected.output
    assert "text_detection" in inspected.output
    validated = CliRunner().invoke(cli, ["validate", str(out)])
    assert validated.exit_code == 0, validated.output
    (out / "text_detection" / "2" / "model.onnx").unlink()
    assert [p.message for p in validate_repository(out)] == [
        "onnxruntime-backend model 'text_detection' version 2 has no model.onnx; expected "
        "text_detection/2/model.onnx (the graph the onnxruntime backend loads)",
        "missing: listed in repogen.manifest.json but not on disk; rebuild or restore it",
    ]


def test_declared_tensors_that_agree_are_the_config(detection: Path) -> None:
    repo = Repository()
    repo.onnx(
        "text_detection",
        detection,
        inputs=[Tensor(name="input_images:0", dtype=np.float32, shape=(480, 640, 3))],  # narrows symbolic dims
        outputs=[Tensor(name="scores", dtype=np.float32, shape=(-1, -1, 1))],  # a subset of the outputs
        config=ModelConfig(max_batch_size=2),
    )
    model = _network(repo).model
    assert model.inputs == (IOSpec("input_images:0", "TYPE_FP32", (480, 640, 3)),)
    assert [t.name for t in model.outputs] == ["scores"]


def _declare(detection: Path, **kwargs) -> None:
    repo = Repository()
    repo.onnx("text_detection", detection, config=ModelConfig(max_batch_size=4), **kwargs)
    lower(repo)


IMAGES = [Tensor(name="input_images:0", dtype=np.float32, shape=(-1, -1, 3))]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"inputs": [Tensor(name="input_images:0", dtype=np.float64, shape=(-1, -1, 3))]},
            "model 'text_detection': input 'input_images:0' is declared as TYPE_FP64 [-1, -1, 3], but the graph "
            "(detection.onnx) has TYPE_FP32 [-1, -1, 3] (dims without the batch axis). Declare "
            "Tensor(name='input_images:0', dtype=np.float32, shape=(-1, -1, 3)), or leave inputs= out to take the "
            "graph's",
        ),
        (
            {"inputs": IMAGES, "outputs": [Tensor(name="boxes", dtype=np.float32, shape=(-1, 4))]},
            "model 'text_detection': output 'boxes' is declared as TYPE_FP32 [-1, 4], but the graph (detection.onnx) "
            "has TYPE_FP32 [-1, 5] (dims without the batch axis). Declare Tensor(name='boxes', dtype=np.float32, "
            "shape=(-1, 5)), or leave outputs= out to take the graph's",
        ),
        (
            {"inputs": [Tensor(name="input_images:0", dtype=np.float32, shape=(-1, 3))]},
            "model 'text_detection': input 'input_images:0' is declared as TYPE_FP32 [-1, 3], but the graph "
            "(detection.onnx) has TYPE_FP32 [-1, -1, 3]",
        ),
        (
            {"inputs": [Tensor(name="images", dtype=np.float32, shape=(-1, -1, 3))]},
            "model 'text_detection': input 'images' is declared, but the graph (detection.onnx) has no input of that "
            "name; its inputs are ['input_images:0']. Rename the Tensor, or leave inputs= out to take the graph's",
        ),
        (
            {"inputs": []},
            "model 'text_detection': the graph (detection.onnx) has input(s) ['input_images:0'] that are not "
            "declared; declare every input of the graph (['input_images:0']), or leave inputs= out to take the "
            "graph's",
        ),
    ],
)
def test_a_declaration_that_disagrees_with_the_graph_fails_the_build(detection, kwargs, message) -> None:
    with pytest.raises(GraphMismatchError) as caught:
        _declare(detection, **kwargs)
    assert str(caught.value).startswith(f"{caught.value.site}: {message}")
    assert isinstance(caught.value, BuildError)


def test_a_fixed_leading_dim_cannot_be_the_batch_axis(tmp_path: Path) -> None:
    path = write_graph(tmp_path / "fixed.onnx", [("x", FLOAT, [1, 4])], [("y", FLOAT, [1, 4])])
    repo = Repository()
    repo.onnx("Fixed", path, config=ModelConfig(max_batch_size=8))
    with pytest.raises(GraphMismatchError) as caught:
        lower(repo)
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "model 'Fixed': input 'x' of the graph (fixed.onnx) has dims [1, 4]: with max_batch_size=8 its first dim is "
        "the batch axis and must be symbolic (-1); export the graph with a dynamic batch axis, or set "
        "max_batch_size=0"
    )


def test_a_tensor_without_shape_or_tensor_type_is_named(tmp_path: Path) -> None:
    shapeless = write_graph(tmp_path / "shapeless.onnx", [("x", FLOAT, [4])], [("y", FLOAT, None)])
    repo = Repository()
    repo.onnx("Shapeless", shapeless, config=ModelConfig(max_batch_size=0))
    with pytest.raises(GraphMismatchError, match=r"output 'y' of the graph \(shapeless.onnx\) has no shape; declare"):
        lower(repo)
    repo = Repository()  # declared, the shape is the declaration's
    repo.onnx("Shapeless", shapeless, outputs=[Tensor(name="y", dtype=np.float32, shape=(4,))],
              config=ModelConfig(max_batch_size=0))  # fmt: skip
    assert _network(repo).model.outputs == (IOSpec("y", "TYPE_FP32", (4,)),)
    sequence = write_graph(tmp_path / "sequence.onnx", [("x", FLOAT, [4])], [("y", None, None)])
    repo = Repository()
    repo.onnx("Sequence", sequence, config=ModelConfig(max_batch_size=0))
    with pytest.raises(GraphMismatchError, match="output 'y' of the graph .* has a non-tensor type"):
        lower(repo)


def test_a_file_that_is_not_an_onnx_model_or_is_missing(tmp_path: Path) -> None:
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\xff\xff not protobuf")
    repo = Repository()
    repo.onnx("Junk", junk)
    with pytest.raises(BuildError, match=r"model 'Junk': .*junk.onnx is not an ONNX model"):
        lower(repo)
    repo = Repository()
    repo.onnx("Missing", tmp_path / "nowhere.onnx")
    with pytest.raises(BuildError, match=r"model 'Missing': cannot read the ONNX file .*nowhere.onnx"):
        lower(repo)


def test_versions_must_have_the_same_tensors(detection: Path, tmp_path: Path) -> None:
    other = write_graph(tmp_path / "other.onnx", [("x", FLOAT, ["b", 4])], [("y", FLOAT, ["b", 4])])
    repo = Repository()
    repo.onnx("D", detection, config=ModelConfig(max_batch_size=4))
    repo.onnx("D", other, config=ModelConfig(max_batch_size=4), model_version=2)
    with pytest.raises(GraphMismatchError) as caught:
        lower(repo)
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "model 'D': version 2 (other.onnx) has inputs 'x' TYPE_FP32 [4] and outputs 'y' TYPE_FP32 [4], but version 1 "
        "(detection.onnx) has inputs 'input_images:0' TYPE_FP32 [-1, -1, 3] and outputs 'scores' TYPE_FP32 "
        "[-1, -1, 1], 'boxes' TYPE_FP32 [-1, 5]; versions share one config.pbtxt, so give this graph another model "
        "name, or declare inputs=/outputs= that fit both"
    )


def test_names_backends_and_decoupled_are_checked(detection: Path) -> None:
    repo = Repository()
    repo.onnx("D", detection, backend="tensorrt")
    with pytest.raises(BuildError, match=r"backend='tensorrt' is not one of \['onnxruntime', 'python'\]"):
        lower(repo)
    repo = Repository()
    repo.bind("D", lambda requests: requests, [Tensor((1,), np.float32, "x")], [Tensor((1,), np.float32, "y")])
    repo.onnx("D", detection)
    with pytest.raises(BuildError, match="model 'D' is declared both as an exported network and with bind/@model"):
        lower(repo)
    repo = Repository()
    repo.onnx("D", detection, config=ModelConfig(max_batch_size=4, decoupled=True))
    with pytest.raises(BuildError, match="remove decoupled=True"):
        lower(repo)


def test_the_python_backend_needs_onnxruntime_where_the_build_runs(detection: Path, monkeypatch) -> None:
    repo = Repository()
    repo.onnx("D", detection, config=ModelConfig(max_batch_size=4), backend="python")
    monkeypatch.setattr(networks_module.importlib.metadata, "packages_distributions", lambda: {})
    with pytest.raises(BuildError) as caught:
        lower(repo)
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "model 'D': backend='python' runs the graph through onnxruntime, shipped inside the repository from the "
        "environment that builds it, but no installed distribution provides onnxruntime here; `pip install "
        "onnxruntime` where repogen build runs (or use backend='onnxruntime' on a server with that backend)"
    )
    monkeypatch.setattr(
        networks_module.importlib.metadata, "packages_distributions", lambda: {"onnxruntime": ["onnxruntime"]}
    )
    (model,) = lower(repo).models  # a Python model whose callable opens <version>/model.onnx
    (version,) = model.versions
    assert version.files == (("model.onnx", detection),) and version.imports == ("onnxruntime",)
    assert model.inputs == (IOSpec("input_images:0", "TYPE_FP32", (-1, -1, 3)),)
    assert [g.kind for g in model.instance_groups] == ["KIND_CPU"]


def test_build_version_n_merges_a_graph_beside_the_others(detection: Path, tmp_path: Path) -> None:
    repo = Repository()
    repo.onnx("text_detection", detection, config=ModelConfig(max_batch_size=4))
    out = tmp_path / "repo"
    build_repository(repo, out)
    build_repository(repo, out, version=3)  # `repogen build --model-version 3`: the next version, beside 1
    assert sorted(p.name for p in (out / "text_detection").iterdir() if p.is_dir()) == ["1", "3"]
    assert (out / "text_detection" / "3" / "model.onnx").read_bytes() == detection.read_bytes()
    config_text = (out / "text_detection" / "config.pbtxt").read_text()
    assert 'backend: "onnxruntime"' in config_text and "all {" in config_text
    assert validate_repository(out) == []


def test_diff_names_a_changed_graph(detection: Path, tmp_path: Path) -> None:
    repo = Repository()
    repo.onnx("text_detection", detection, config=ModelConfig(max_batch_size=4))
    build_repository(repo, tmp_path / "a")
    write_graph(detection, [("input_images:0", FLOAT, ["b", "h", "w", 3])],
                [("scores", FLOAT, ["b", "h", "w", 1]), ("boxes", FLOAT, ["b", None, 5])], ["W2"])  # fmt: skip
    build_repository(repo, tmp_path / "b")
    result = CliRunner().invoke(cli, ["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 1
    assert "binary file differs: text_detection/1/model.onnx (model text_detection's file): sha256 " in result.output
