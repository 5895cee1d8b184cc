"""Exported ONNX networks as models, served on the Python backend through shipped onnxruntime.

    repogen build tests/apps/onnx/app.py:models -o build/onnx    (needs onnx and onnxruntime installed)

The graphs are made here, at build time, with the ``onnx`` package (nothing is downloaded):

* ``Affine``: relu(x @ W + b), x FP32 [batch, 4] -> y FP32 [batch, 3]; tensors read from the graph,
  batching (max_batch_size=8: the graph's symbolic leading dim is the batch axis); version 2 beside
  version 1 with other weights, both served.
* ``External``: Affine's version 1 saved with its weights in ``affine.weights`` beside the graph
  (``location=``, as models over 2 GB are): the build ships that file beside ``model.onnx``.
* ``Mixed``: no batching; ``sum = a + b`` on INT64 [2, n] and ``echo = Identity(text)`` on a STRING
  [n], with declared tensors that agree with the graph (BYTES travel as bytes, onnxruntime sees str).

* ``Lookup``: ``Gather(table, index)``, INT64 [batch, k] -> FP32 [batch, k, 2]; its batcher holds
  requests until 3 rows wait, so 3 sent together are one batch: one ``session.run``, unless an index
  is out of bounds, which fails that request alone. Its parameters set onnxruntime's session options
  under the names Triton's onnxruntime backend reads.

All use ``backend="python"``: the PyPI tritonserver has only the Python backend, so the build ships
onnxruntime into the repository (the third-party-packages capability) and binds repogen's session
class. ``Pipeline`` is a traced ensemble Pre (Python) -> Affine (ONNX) -> Post (Python) and ``Fused``
the same steps fused into one Python model; ``Caller`` a Python model calling Affine and ``Handmade``
(a hand-written Python-backend directory taken in with ``models.include``) through BLS.
``tests/apps/onnx/expected.py`` runs onnxruntime on the graphs made here for the answers, and the
models in this process (``models.local()``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()
FEATURES = 4
_DIRECTORY = tempfile.mkdtemp(prefix="repogen-onnx-app-")
atexit.register(shutil.rmtree, _DIRECTORY, True)  # the build has copied the graphs by then


def _save(model: onnx.ModelProto, name: str) -> str:
    onnx.checker.check_model(model)
    path = os.path.join(_DIRECTORY, name)
    onnx.save(model, path)
    return path


def affine(scale: float, external: bool = False) -> str:
    """relu(x @ W + b) with a symbolic batch dim, as an exporter writes it.

    ``external``: its weights in a file beside the graph, as exporters save models over 2 GB.
    """
    weights = (np.arange(FEATURES * 3, dtype=np.float32).reshape(FEATURES, 3) / 10 - 0.5) * scale
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"])],
        "affine",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor("W", TensorProto.FLOAT, weights.shape, weights.ravel()),
         helper.make_tensor("b", TensorProto.FLOAT, [3], [0.1, -0.2, 0.3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    if not external:
        return _save(model, f"affine_{scale}.onnx")
    for index, weight in enumerate(list(model.graph.initializer)):  # as raw bytes, which onnx.save moves out
        model.graph.initializer[index].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight), weight.name))
    onnx.checker.check_model(model)
    path = os.path.join(_DIRECTORY, "external", f"affine_{scale}.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path, save_as_external_data=True, location="affine.weights", size_threshold=0)
    return path


def mixed() -> str:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Identity", ["text"], ["echo"])],
        "mixed",
        [helper.make_tensor_value_info("a", TensorProto.INT64, [2, "n"]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [2, "n"]),
         helper.make_tensor_value_info("text", TensorProto.STRING, ["m"])],
        [helper.make_tensor_value_info("sum", TensorProto.INT64, [2, "n"]),
         helper.make_tensor_value_info("echo", TensorProto.STRING, ["m"])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return _save(model, "mixed.onnx")


batched = ModelConfig(max_batch_size=8, batcher=DynamicBatcher(max_queue_delay_microseconds=100))
models.onnx("Affine", affine(1.0), config=batched, backend="python")
affine_model = models.onnx("Affine", affine(2.0), config=batched, backend="python", model_version=2)


@models.model("Pre", inputs=[Tensor(name="raw", dtype=np.float32, shape=(FEATURES,))],
              outputs=[Tensor(name="x", dtype=np.float32, shape=(FEATURES,))], config=batched)  # fmt: skip
@batch
def pre(raw):
    return {"x": raw * 2 - 1}


@models.model("Post", inputs=[Tensor(name="y", dtype=np.float32, shape=(3,))],
              outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))], config=batched)  # fmt: skip
@batch
def post(y):
    return {"total": y.sum(axis=1, keepdims=True)}


@models.ensemble("Pipeline", inputs=[Tensor(name="raw", dtype=np.float32, shape=(FEATURES,))],
                 outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))], config=batched)  # fmt: skip
def pipeline(raw):
    """Python -> ONNX (its latest version) -> Python, scheduled by Triton."""
    return _steps(raw)


def _steps(raw):
    return {"total": post(y=affine_model(x=pre(raw=raw)["x"])["y"])["total"]}


@models.ensemble("Fused", inputs=[Tensor(name="raw", dtype=np.float32, shape=(FEATURES,))],
                 outputs=[Tensor(name="total", dtype=np.float32, shape=(1,))], config=batched, fuse=True)  # fmt: skip
def fused(raw):
    """The same steps in one Python model: the ONNX session runs in its process."""
    return _steps(raw)


def lookup() -> str:
    table = np.arange(20, dtype=np.float32).reshape(10, 2) / 4
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "index"], ["rows"], axis=0)],
        "lookup",
        [helper.make_tensor_value_info("index", TensorProto.INT64, ["batch", "k"])],
        [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["batch", "k", 2])],
        [helper.make_tensor("table", TensorProto.FLOAT, table.shape, table.ravel())],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return _save(model, "lookup.onnx")


LOOKUP_BATCH = 3
models.onnx(
    "Lookup",
    lookup(),
    config=ModelConfig(
        max_batch_size=8,
        batcher=DynamicBatcher(preferred_batch_size=[LOOKUP_BATCH], max_queue_delay_microseconds=5_000_000),
        parameters={
            "intra_op_thread_count": "1",
            "inter_op_thread_count": "1",
            "execution_mode": "0",
            "enable_mem_arena": "1",
            "enable_mem_pattern": "0",
            "memory.enable_memory_arena_shrinkage": "cpu:0",
        },
    ),  # fmt: skip
    backend="python",
)

handmade = models.include("Handmade", "handmade")  # a hand-written Python-backend model directory, as it is


@models.model("Caller", inputs=[Tensor(name="x", dtype=np.float32, shape=(FEATURES,))],
              outputs=[Tensor(name="y10", dtype=np.float32, shape=(3,)),
                       Tensor(name="handmade", dtype=np.float32, shape=(3,))], config=batched)  # fmt: skip
@batch
def caller(x):
    """Calls the ONNX model and the included one through BLS, as any other model of the repository."""
    y = affine_model(x=x)["y"]
    return {"y10": y * 10, "handmade": handmade(x=y.ravel())["y"].reshape(y.shape)}


models.onnx(
    "Mixed",
    mixed(),
    inputs=[
        Tensor(name="a", dtype=np.int64, shape=(2, -1)),
        Tensor(name="b", dtype=np.int64, shape=(2, -1)),
        Tensor(name="text", dtype=bytes, shape=(-1,)),
    ],
    outputs=[Tensor(name="sum", dtype=np.int64, shape=(2, -1)), Tensor(name="echo", dtype=bytes, shape=(-1,))],
    config=ModelConfig(max_batch_size=0),
    backend="python",
)

models.onnx("External", affine(1.0, external=True), config=batched, backend="python")
