"""ONNX models as ensemble steps and BLS targets: their handles work like the Python models'.

Served end to end (Python -> ONNX -> Python, and a BLS caller) in tests/integration/test_onnx_models.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, Repository, Tensor, batch
from repogen.ir import lower
from repogen.testing.onnx_graphs import FLOAT, write_graph

B = ModelConfig(max_batch_size=8)
SCORES = "feature_fusion/Conv_7/Sigmoid:0"


def _repository(tmp_path: Path, pre_dtype=np.float32, fuse: bool = False, backend: str = "onnxruntime"):
    graph = write_graph(tmp_path / "detection.onnx", [("input_images:0", FLOAT, ["batch", "h", "w", 3])],
                        [(SCORES, FLOAT, ["batch", "h", "w", 1])])  # fmt: skip
    models = Repository()

    @models.model("Pre", inputs=[Tensor(name="raw", dtype=np.uint8, shape=(-1, -1, 3))],
                  outputs=[Tensor(name="image", dtype=pre_dtype, shape=(-1, -1, 3))], config=B)  # fmt: skip
    @batch
    def pre(raw):
        return {"image": raw / 255}

    detect = models.onnx("Detect", graph, config=B, backend=backend)

    @models.model("Best", inputs=[Tensor(name="image", dtype=np.float32, shape=(-1, -1, 3))],
                  outputs=[Tensor(name="best", dtype=np.float32, shape=(1,))], config=B)  # fmt: skip
    @batch
    def best(image):
        scores = detect(**{"input_images:0": image})[SCORES]
        return {"best": scores.reshape(len(scores), -1).max(axis=1, keepdims=True)}

    scores = Tensor(name="scores", dtype=np.float32, shape=(-1, -1, 1))

    @models.ensemble("Pipeline", inputs=[Tensor(name="raw", dtype=np.uint8, shape=(-1, -1, 3))], outputs=[scores],
                     config=B, fuse=fuse)  # fmt: skip
    def pipeline(raw):
        return {"scores": detect(**{"input_images:0": pre(raw=raw)["image"]})[SCORES]}

    return models


def test_an_onnx_step_is_wired_by_its_graph_s_tensor_names(tmp_path: Path) -> None:
    spec = lower(_repository(tmp_path))
    (ensemble,) = spec.ensembles
    assert [(s.model, s.input_map, s.output_map) for s in ensemble.steps] == [
        ("Pre", (("raw", "raw"),), (("image", "Pre_image"),)),
        ("Detect", (("input_images:0", "Pre_image"),), ((SCORES, "scores"),)),
    ]
    (caller,) = [m for m in spec.models if m.name == "Best"]
    (client,) = caller.versions[0].clients  # the ONNX model is called through BLS
    assert (client.model, client.input_types, client.outputs) == (
        "Detect", (("input_images:0", "TYPE_FP32"),), (SCORES,),
    )  # fmt: skip


def test_the_wiring_is_checked_against_the_graph(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        lower(_repository(tmp_path, pre_dtype=np.float64))
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "ensemble 'Pipeline': tensor 'Pre_image' is TYPE_FP64 (step 1 (Pre) output 'image') but step 2 (Detect) "
        "input 'input_images:0' expects TYPE_FP32; make the data types agree"
    )


def test_fuse_refuses_an_onnx_step_on_triton_s_backend_naming_it(tmp_path: Path) -> None:
    with pytest.raises(BuildError) as caught:
        lower(_repository(tmp_path, fuse=True, backend="onnxruntime"))
    assert caught.value.site is not None and str(caught.value) == f"{caught.value.site}: " + (
        "ensemble 'Pipeline' (fuse=True): step 'Detect' is an ONNX model (backend 'onnxruntime'), not a Python "
        "callable; fusing composes Python models only. Drop fuse=True to let Triton schedule the steps, or call "
        "that model through BLS from a Python model"
    )


def test_fuse_runs_a_python_backend_onnx_step_in_process(tmp_path: Path, monkeypatch) -> None:
    """Its graph ships under the fused model's steps/, and onnxruntime (the session imports it) with the payload."""
    from repogen.emit import requirements
    from repogen.emit.fused_model import emit_fused
    from repogen.emit.plan import plan_payloads
    from repogen.ir import networks

    monkeypatch.setattr(networks.importlib.metadata, "packages_distributions", lambda: {"onnxruntime": ["x"]})
    spec = lower(_repository(tmp_path, fuse=True, backend="python"))
    (fused,) = spec.fused
    assert [m.name for m in fused.step_models] == ["Pre", "Detect"]
    shipped = []
    monkeypatch.setattr(requirements, "third_party", lambda modules: shipped.extend(modules) or {})
    files = emit_fused(fused, plan_payloads(spec))
    assert files["Pipeline/1/steps/Detect/1/model.onnx"].source == tmp_path / "detection.onnx"  # copied by the writer
    assert "onnxruntime" in shipped
