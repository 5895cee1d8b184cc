"""An exported ONNX network served on the Python backend (``models.onnx(..., backend="python")``).

For a server without Triton's onnxruntime backend (PyPI's tritonserver, minimal images): the build
binds this class as the model's callable and ships onnxruntime inside the repository like any other
package a payload imports, and the graph as ``<version>/model.onnx``, where the onnxruntime backend
would find it. One session per model instance, built in the server; each request runs as it came
(its own batch), so the answers are onnxruntime's own, whatever the batcher grouped.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

GRAPH_FILE = "model.onnx"

_decode = np.frompyfunc(lambda item: item.decode("utf-8") if isinstance(item, bytes) else item, 1, 1)
_encode = np.frompyfunc(lambda item: item.encode("utf-8") if isinstance(item, str) else item, 1, 1)


class OnnxSession:
    """The model's callable: an onnxruntime session on the version's ``model.onnx``."""

    def __init__(self, context: Any):
        import onnxruntime  # shipped in the version's packages: imported only by models that run a graph

        providers: list[Any] = ["CPUExecutionProvider"]
        if context.instance_kind.upper().endswith("GPU") and "CUDAExecutionProvider" in (
            onnxruntime.get_available_providers()
        ):
            providers.insert(0, ("CUDAExecutionProvider", {"device_id": context.device_id}))
        self.session = onnxruntime.InferenceSession(os.path.join(context.model_dir, GRAPH_FILE), providers=providers)
        self.outputs = [tensor.name for tensor in context.model_config.outputs]

    def __call__(self, requests: list[Any]) -> list[dict[str, np.ndarray]]:
        return [self.run(request) for request in requests]

    def run(self, request: Any) -> dict[str, np.ndarray]:
        """One request: onnxruntime takes strings as ``str``, Triton sends and returns BYTES as ``bytes``."""
        feed = {
            name: _decode(value).astype(object) if value.dtype == object else value for name, value in request.items()
        }
        values = self.session.run(self.outputs, feed)
        return {
            name: _encode(value).astype(object) if value.dtype == object else value
            for name, value in zip(self.outputs, values, strict=True)
        }
