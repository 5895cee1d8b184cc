"""The builder's own answers: run by the builder's Python (which has the packages) beside the build.

    <builder venv>/bin/python tests/apps/packages/expected.py OUT.npz

Every model runs in-process through ``models.local()`` on the inputs of ``INPUTS``; the arrays are
saved as ``<model>.<output>``, with the builder's package versions under ``versions.<dist>``.
"""

from __future__ import annotations

import importlib.metadata
import sys

import numpy as np
from app import models

INPUTS = {
    "Forest": {"x": np.array([[0.5, -3.0, 0.01, 2.0], [-1.0, 12.0, -0.2, -4.0], [2.0, 0.0, 0.0, 9.0]])},
    "Onnx": {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    "Yaml": {"text": np.array([[b"a: 1\nb: 2.5\nname: x"], [b"{w: -4, z: [1]}"]], dtype=object)},
    "Plain": {"x": np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)},
}
DISTRIBUTIONS = ("scikit-learn", "scipy", "onnxruntime", "PyYAML")


def main(path: str) -> None:
    local = models.local()
    arrays = {}
    for model, inputs in INPUTS.items():
        arrays.update({f"{model}.{name}": value for name, value in local.infer(model, inputs).items()})
    arrays.update({f"versions.{d}": np.array(importlib.metadata.version(d)) for d in DISTRIBUTIONS})
    np.savez(path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1])
