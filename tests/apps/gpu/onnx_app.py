"""An ONNX graph on the Python backend on a KIND_GPU instance (tests/gpu): onnxruntime's CUDA provider where the
onnxruntime the server has offers one, else the CPU, said plainly in the server's log.

``double.onnx`` (120 bytes, y = 2x on FP32 [batch, 2], opset 17) was made once with onnx 1.23's helper
(``make_node("Mul", ["x", "two"], ["y"])``, the constant an initializer) and is kept as a file: the GPU machine
has onnxruntime but not onnx.
"""

import os

from repogen import InstanceGroup, ModelConfig, Repository

models = Repository()

GRAPH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "double.onnx")

models.onnx(
    "Double",
    GRAPH,
    backend="python",
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU")]),
)
