"""A stand-in for an onnxruntime ``InferenceSession``: what test_onnx_session.py and test_onnx_model_source.py run."""

from __future__ import annotations

import numpy as np

W = np.arange(6, dtype=np.float32).reshape(3, 2)


class FakeSession:
    """``y = x @ W``; ``n``: the rows, without a batch axis; refuses a negative value, as a Gather out of bounds."""

    def __init__(self):
        self.runs = []

    def run(self, outputs, feed, run_options):
        x = feed["x"]
        self.runs.append(x.shape)
        if (x < 0).any():
            raise RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : negative index")
        values = {"y": x @ W[: x.shape[-1]], "n": np.array(x.shape[0], np.int64)}
        return [values[name] for name in outputs]
