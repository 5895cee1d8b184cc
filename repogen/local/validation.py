"""The request checks Triton makes before a model sees a request, repeated for in-process runs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.spec import IOSpec
from ..runtime.errors import InferenceError
from ..triton.dtypes import NUMPY_DTYPES
from ..triton.shapes import dims_match


def prepare_inputs(
    model: str, specs: tuple[IOSpec, ...], max_batch_size: int, inputs: dict[str, Any]
) -> dict[str, np.ndarray]:
    """Arrays as a client would send them, with Triton's errors for what Triton would reject."""
    declared = {t.name: t for t in specs}
    unknown = sorted(set(inputs) - set(declared))
    if unknown:
        raise InferenceError(f"model '{model}' has no input(s) {unknown}; its inputs are {sorted(declared)}")
    missing = [t.name for t in specs if not t.optional and t.name not in inputs]
    if missing:
        raise InferenceError(f"model '{model}': expected input(s) {missing} in the request")
    arrays = {}
    for name, value in inputs.items():
        spec = declared[name]
        array = _as_array(value, spec)
        _check_shape(model, spec, array.shape, max_batch_size)
        arrays[name] = array
    return arrays


def _as_array(value: Any, spec: IOSpec) -> np.ndarray:
    array = np.asarray(value)
    want = NUMPY_DTYPES[spec.data_type]
    if spec.data_type == "TYPE_STRING":
        if array.dtype.kind not in "OSU":
            raise InferenceError(f"input '{spec.name}': expected BYTES, found {array.dtype}")
        return array if array.dtype == object else array.astype(object)
    if array.dtype != want:
        raise InferenceError(f"input '{spec.name}': expected dtype {want} ({spec.data_type}), found {array.dtype}")
    return array


def _check_shape(model: str, spec: IOSpec, shape: tuple[int, ...], max_batch_size: int) -> None:
    dims = shape
    if max_batch_size:
        if not shape:
            raise InferenceError(f"model '{model}', input '{spec.name}': expected a batch axis first, found a scalar")
        if shape[0] > max_batch_size:
            raise InferenceError(f"model '{model}': batch size {shape[0]} exceeds max_batch_size={max_batch_size}")
        dims = shape[1:]
    want = spec.dims
    if not dims_match(dims, want):
        batch = "[batch] + " if max_batch_size else ""
        raise InferenceError(
            f"model '{model}', input '{spec.name}': expected shape {batch}{list(want)}, found {list(shape)}"
        )


def check_batch(model: str, arrays: dict[str, np.ndarray], max_batch_size: int) -> None:
    if max_batch_size:
        sizes = {a.shape[0] for a in arrays.values()}
        if len(sizes) > 1:
            raise InferenceError(f"model '{model}': inputs disagree on the batch size: {sorted(sizes)}")
