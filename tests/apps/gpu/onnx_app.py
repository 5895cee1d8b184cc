"""An ONNX graph on the Python backend on a KIND_GPU instance (tests/gpu): onnxruntime's CUDA provider where the
onnxruntime the server has offers one, else the CPU, said plainly in the server's log."""

import atexit
import os
import shutil
import tempfile

import onnx
from onnx import TensorProto, helper

from repogen import InstanceGroup, ModelConfig, Repository

models = Repository()

_DIR = tempfile.mkdtemp(prefix="repogen-gpu-onnx-")
atexit.register(shutil.rmtree, _DIR, True)
GRAPH = os.path.join(_DIR, "double.onnx")

_x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2])
_y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])
_two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
_graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y"])], "double", [_x], [_y], [_two])
onnx.save(helper.make_model(_graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), GRAPH)

models.onnx(
    "Double",
    GRAPH,
    backend="python",
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU")]),
)
