"""Exported ONNX networks as models: ``models.onnx`` writes Triton's standard layout and config.

The tutorial's text-detection network (``detection.onnx``, made by ``make_graphs.py``) with its
tensors read from the graph: the symbolic leading dim becomes the batch axis (max_batch_size=8),
the other symbolic dims -1. A version 2 beside version 1 (another file), the latest one served.
``Recognition`` declares its tensors; they agree with the graph (a mismatch fails the build).
Both run on Triton's onnxruntime backend (``backend: "onnxruntime"``, ``<name>/<version>/model.onnx``).
"""

import numpy as np

from repogen import DynamicBatcher, InstanceGroup, ModelConfig, Repository, Tensor, VersionPolicy

models = Repository()

detection = ModelConfig(
    max_batch_size=8,
    batcher=DynamicBatcher(max_queue_delay_microseconds=200),
    instance_groups=[InstanceGroup(count=2, kind="KIND_CPU")],
    version_policy=VersionPolicy.latest(1),
)
models.onnx("text_detection", "detection.onnx", config=detection)
models.onnx("text_detection", "detection_v2.onnx", config=detection, model_version=2)

models.onnx(
    "text_recognition",
    "recognition.onnx",
    inputs=[Tensor(name="input.1", dtype=np.float32, shape=(1, 1, 32, 100))],
    outputs=[Tensor(name="308", dtype=np.float32, shape=(1, 100))],
    config=ModelConfig(max_batch_size=0),
)
