"""Padders for ``@group_by_values(..., pad_fn=...)``: make sub-batch results mergeable again.

Sub-batches grouped by a parameter may produce outputs of different trailing shapes (e.g. one
sequence length per group); a padder brings each output to a common shape and dtype so the
results can be scattered back into one array, as PyTriton's ``ConstantPadder`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InferenceError
from .tensors import framework_of

if TYPE_CHECKING:
    from .frameworks import Framework

_TEXT_KINDS = "SUO"  # bytes, str and object (BYTES) arrays are padded with b"" rather than the value


class ConstantPadder:
    """Pad every output of every sub-batch, on all axes but the batch axis, with ``pad_value``."""

    def __init__(self, pad_value: Any = 0):
        self.pad_value = pad_value

    def __call__(self, batches_list: Sequence[Mapping[Any, np.ndarray]]) -> list[dict[Any, Any]]:
        names = list(dict.fromkeys(name for batch in batches_list for name in batch))
        padded: dict[Any, list[np.ndarray | None]] = {}
        for name in names:
            arrays = [batch.get(name) for batch in batches_list]
            padded[name] = self._pad_all(name, arrays)
        return [
            {name: arrays[i] for name, arrays in padded.items() if arrays[i] is not None}
            for i in range(len(batches_list))
        ]

    def _pad_all(self, name: Any, arrays: list[Any]) -> list[Any]:
        framework = next((framework_of(a) for a in arrays if a is not None), None)
        if framework is not None:
            return self._pad_tensors(name, arrays, framework)
        present = [np.asarray(a) for a in arrays if a is not None]
        shape = _common_shape(name, present)
        dtype = _common_dtype(name, present)
        fill = b"" if dtype.kind in _TEXT_KINDS else self.pad_value
        return [None if a is None else _pad_one(np.asarray(a), shape, dtype, fill) for a in arrays]

    def _pad_tensors(self, name: Any, tensors: list[Any], framework: Framework) -> list[Any]:
        """A framework's tensors padded on their device: each copied into a tensor of the common shape."""
        present = [t for t in tensors if t is not None]
        shape = _common_shape(name, present)
        if len({str(t.dtype) for t in present}) > 1:
            found = sorted({str(t.dtype) for t in present})
            raise InferenceError(f"ConstantPadder: output {name!r} has different dtypes across groups: {found}")
        padded: list[Any] = []
        for tensor in tensors:
            if tensor is None or tuple(tensor.shape[1:]) == shape:
                padded.append(tensor)
                continue
            out = framework.full((tensor.shape[0], *shape), self.pad_value, like=tensor)
            out[tuple(slice(0, n) for n in tensor.shape)] = tensor
            padded.append(out)
        return padded


def _pad_one(array: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, fill: Any) -> np.ndarray:
    widths = [(0, 0)] + [(0, want - have) for have, want in zip(array.shape[1:], shape, strict=True)]
    if any(after for _, after in widths):
        array = np.pad(array, widths, mode="constant", constant_values=fill)
    return array.astype(dtype, copy=False)


def _common_shape(name: Any, arrays: list[Any]) -> tuple[int, ...]:
    ranks = {a.ndim for a in arrays}
    if len(ranks) != 1:
        raise InferenceError(
            f"ConstantPadder: output {name!r} has different numbers of dimensions across groups "
            f"({sorted(a.shape for a in arrays)}); only the sizes of the axes can differ"
        )
    if ranks == {0}:
        raise InferenceError(f"ConstantPadder: output {name!r} is a scalar; outputs must have a batch axis")
    return tuple(int(n) for n in np.max([tuple(a.shape[1:]) for a in arrays], axis=0))


def _common_dtype(name: Any, arrays: list[np.ndarray]) -> np.dtype:
    """Bytes and str widen to the longest item; any other dtype must agree across groups."""
    dtypes = [a.dtype for a in arrays]
    first = dtypes[0]
    if any(d.kind != first.kind for d in dtypes):
        raise InferenceError(
            f"ConstantPadder: output {name!r} has dtypes of different kinds across groups: {sorted(map(str, dtypes))}"
        )
    if first.kind in "SU":
        return max(dtypes, key=lambda d: d.itemsize)
    if any(d != first for d in dtypes):
        raise InferenceError(f"ConstantPadder: output {name!r} has different dtypes across groups: {dtypes}")
    return first
