"""Four models whose callables import third-party packages, as a new user's would.

    repogen build tests/apps/packages/app.py:models -o build/packages

``Forest`` is a scikit-learn pipeline fitted here, at build time, and pickled with its estimator;
``Onnx`` is a class that starts an onnxruntime session inside the server on a graph this file
makes with ``onnx`` (which therefore runs at build time only and must not ship); ``Yaml`` parses
YAML with PyYAML; ``Plain`` needs numpy alone. A stock server has none of these packages: the
build ships them. ``expected.py`` computes the answers with the builder's own packages.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime
import yaml
from onnx import TensorProto, helper
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from repogen import ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()
FEATURES = 4


def _fitted_forest():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, FEATURES)) * np.array([1.0, 10.0, 0.1, 5.0])
    y = (x[:, 0] + x[:, 1] / 10 - x[:, 3] / 5 > 0).astype(np.int64)
    return make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0)).fit(
        x, y
    )


FOREST = _fitted_forest()


@batch
def forest(x):
    return {
        "label": FOREST.predict(x).astype(np.int64).reshape(-1, 1),
        "proba": FOREST.predict_proba(x).astype(np.float32),
    }


models.bind(
    "Forest",
    infer_func=forest,
    inputs=[Tensor(name="x", dtype=np.float64, shape=(FEATURES,))],
    outputs=[Tensor(name="label", dtype=np.int64, shape=(1,)), Tensor(name="proba", dtype=np.float32, shape=(2,))],
    config=ModelConfig(max_batch_size=16),
)


def _graph_file() -> str:
    """relu(x @ W + b) as an ONNX file, made with the onnx package (a build-time-only dependency)."""
    weights = np.arange(FEATURES * 3, dtype=np.float32).reshape(FEATURES, 3) / 10 - 0.5
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"])],
        "affine_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor("W", TensorProto.FLOAT, weights.shape, weights.ravel()),
         helper.make_tensor("b", TensorProto.FLOAT, [3], [0.1, -0.2, 0.3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    directory = tempfile.mkdtemp(prefix="repogen-onnx-")
    atexit.register(shutil.rmtree, directory, True)  # the build has copied it by then
    path = os.path.join(directory, "affine.onnx")
    onnx.save(model, path)
    return path


class OnnxAffine:
    """The session starts in the server, once per instance, from the shipped graph file."""

    def __init__(self, context: ModelContext):
        self.session = onnxruntime.InferenceSession(context.path("affine.onnx"), providers=["CPUExecutionProvider"])

    @batch
    def __call__(self, x):
        (y,) = self.session.run(["y"], {"x": x})
        return {"y": y, "version": np.full((len(x), 1), onnxruntime.__version__.encode(), dtype=object)}


models.bind(
    "Onnx",
    infer_func=OnnxAffine,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(FEATURES,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(3,)), Tensor(name="version", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=16),
    files=[_graph_file()],
)


@batch
def parse_yaml(text):
    totals = []
    for row in text[:, 0]:
        document = yaml.safe_load(row.decode("utf-8")) or {}
        totals.append(float(sum(v for v in document.values() if isinstance(v, (int, float)))))
    return {"total": np.array(totals, dtype=np.float64).reshape(-1, 1)}


models.bind(
    "Yaml",
    infer_func=parse_yaml,
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="total", dtype=np.float64, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)


@batch
def plain(x):
    return {"y": np.cumsum(x, axis=1)}


models.bind(
    "Plain",
    infer_func=plain,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
