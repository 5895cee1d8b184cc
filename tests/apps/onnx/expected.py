"""onnxruntime's own answers on the app's source graphs, run by the builder's Python (which has it).

    <builder venv>/bin/python tests/apps/onnx/expected.py OUT.npz

For each (model, version) of ``INPUTS`` it opens the graph tests/apps/onnx/app.py makes for it (the source model,
not the ``model.onnx`` a build wrote: a build that wrote another graph must fail the comparison) in an onnxruntime
session, and saves the inputs as ``<model>.<version>.in.<name>`` and the answers as ``<model>.<version>.out.<name>``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnxruntime

TEXT = np.array([b"hello", "d\u00e9j\u00e0 vu".encode(), b""], dtype=object)
INPUTS = {
    ("Affine", 1): {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    ("External", 1): {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0]], dtype=np.float32)},
    ("Affine", 2): {"x": np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0]],
                                  dtype=np.float32)},
    ("Mixed", 1): {"a": np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64),
                   "b": np.array([[10, 20, 30], [-4, -5, 2**40]], dtype=np.int64), "text": TEXT},
}  # fmt: skip


def _sources() -> dict[tuple[str, int], str]:
    """The source graph of each served (model, version), as the app makes it (written again, the same bytes)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import app  # the app makes its graphs when imported

    return {
        ("Affine", 1): app.affine(1.0),
        ("Affine", 2): app.affine(2.0),
        ("External", 1): app.affine(1.0, external=True),
        ("Mixed", 1): app.mixed(),
        ("Lookup", 1): app.lookup(),
    }


def main(path: str) -> None:
    arrays = {}
    sources = _sources()
    for (model, version), inputs in INPUTS.items():
        session = onnxruntime.InferenceSession(sources[model, version], providers=["CPUExecutionProvider"])
        feed = {
            k: np.array([s.decode() for s in v], dtype=object) if v.dtype == object else v for k, v in inputs.items()
        }
        names = [o.name for o in session.get_outputs()]
        for name, value in zip(names, session.run(names, feed), strict=True):
            if value.dtype == object:
                value = np.array([s.encode() for s in value.ravel()], dtype=object).reshape(value.shape)
            arrays[f"{model}.{version}.out.{name}"] = value
        arrays.update({f"{model}.{version}.in.{name}": value for name, value in inputs.items()})
    # The pipelines call Affine's latest version (2): Pipeline = Post(Affine(Pre(raw))), Caller = 10 * Affine(x).
    raw = np.array([[0.5, 1.0, -2.0, 3.0], [0.0, 0.25, 0.75, -1.0]], dtype=np.float32)
    latest = onnxruntime.InferenceSession(sources["Affine", 2], providers=["CPUExecutionProvider"])
    (y,) = latest.run(["y"], {"x": raw * 2 - 1})
    arrays.update({"Pipeline.in.raw": raw, "Pipeline.out.total": y.sum(axis=1, keepdims=True)})
    (y,) = latest.run(["y"], {"x": raw})
    arrays.update({"Caller.in.x": raw, "Caller.out.y10": y * 10, "Caller.out.handmade": 2 * y + 1})
    index = np.array([[0, 9], [3, 3], [5, 1]], dtype=np.int64)  # three requests of one row each
    lookup = onnxruntime.InferenceSession(sources["Lookup", 1], providers=["CPUExecutionProvider"])
    (rows,) = lookup.run(["rows"], {"index": index})
    arrays.update({"Lookup.in.index": index, "Lookup.out.rows": rows})
    arrays.update(_local(raw, index))
    np.savez(path, **arrays)


def _local(raw: np.ndarray, index: np.ndarray) -> dict[str, np.ndarray]:
    """The same models run in this process by ``models.local()``: ``local.<model>.<output>``."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from app import models  # the app makes its graphs when imported

    local = models.local()
    found = {"local.Affine.y": local.infer("Affine", {"x": raw})["y"]}
    for name in ("Pipeline", "Fused"):
        found[f"local.{name}.total"] = local.infer(name, {"raw": raw})["total"]
    found["local.Lookup.rows"] = local.infer("Lookup", {"index": index})["rows"]
    try:
        local.infer("Lookup", {"index": np.array([[12]], dtype=np.int64)})
    except Exception as exc:  # the client's error: ModelCallError with onnxruntime's message
        found["local.Lookup.error"] = np.array(f"{type(exc).__name__}: {exc}")
    return found


if __name__ == "__main__":
    main(sys.argv[1])
