"""What the packages app must answer, computed from its source objects by the builder's Python (which has the
packages), never through repogen's runner or build.

    <builder venv>/bin/python tests/apps/packages/expected.py OUT.npz

Each answer comes from the package the model uses, called directly on the inputs of ``INPUTS``: the app's fitted
scikit-learn pipeline, an onnxruntime session on the graph the app writes, PyYAML, numpy. The arrays are saved as
``<model>.<output>``, with the builder's package versions under ``versions.<dist>``.
"""

from __future__ import annotations

import importlib.metadata
import sys

import numpy as np
import onnxruntime
import yaml
from app import FOREST, _graph_file

INPUTS = {
    "Forest": {"x": np.array([[0.5, -3.0, 0.01, 2.0], [-1.0, 12.0, -0.2, -4.0], [2.0, 0.0, 0.0, 9.0]])},
    "Onnx": {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    "Yaml": {"text": np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4, z: [1]}"]], dtype=object)},
    "Plain": {"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)},
}
DISTRIBUTIONS = ("scikit-learn", "scipy", "onnxruntime", "PyYAML")


def _yaml_total(text: bytes) -> float:
    document = yaml.safe_load(text.decode("utf-8")) or {}
    return float(sum(v for v in document.values() if isinstance(v, (int, float))))


def answers() -> dict[str, np.ndarray]:
    forest, onnx_x = INPUTS["Forest"]["x"], INPUTS["Onnx"]["x"]
    session = onnxruntime.InferenceSession(_graph_file(), providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], {"x": onnx_x})
    texts = INPUTS["Yaml"]["text"][:, 0]
    return {
        "Forest.label": FOREST.predict(forest).astype(np.int64).reshape(-1, 1),
        "Forest.proba": FOREST.predict_proba(forest).astype(np.float32),
        "Onnx.y": y,
        "Onnx.version": np.full((len(onnx_x), 1), onnxruntime.__version__.encode(), dtype=object),
        "Yaml.total": np.array([[_yaml_total(text)] for text in texts], dtype=np.float64),
        "Plain.y": np.cumsum(INPUTS["Plain"]["x"], axis=1),
    }


def main(path: str) -> None:
    arrays = answers()
    arrays.update({f"versions.{d}": np.array(importlib.metadata.version(d)) for d in DISTRIBUTIONS})
    np.savez(path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
