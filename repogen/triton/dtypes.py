"""Mapping between the dtypes users write and Triton's ``DataType`` enum names."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BuildError

_BY_NUMPY = {
    np.dtype(np.bool_): "TYPE_BOOL",
    np.dtype(np.uint8): "TYPE_UINT8",
    np.dtype(np.uint16): "TYPE_UINT16",
    np.dtype(np.uint32): "TYPE_UINT32",
    np.dtype(np.uint64): "TYPE_UINT64",
    np.dtype(np.int8): "TYPE_INT8",
    np.dtype(np.int16): "TYPE_INT16",
    np.dtype(np.int32): "TYPE_INT32",
    np.dtype(np.int64): "TYPE_INT64",
    np.dtype(np.float16): "TYPE_FP16",
    np.dtype(np.float32): "TYPE_FP32",
    np.dtype(np.float64): "TYPE_FP64",
}
# Triton's short names (as in the HTTP/gRPC protocol) → enum names.
_BY_TRITON_NAME = {name[len("TYPE_") :]: name for name in _BY_NUMPY.values()} | {
    "BYTES": "TYPE_STRING",
    "STRING": "TYPE_STRING",
}
_BYTES_LIKE = (bytes, np.bytes_, object, np.object_, str, np.str_)

SUPPORTED = "bool, (u)int8/16/32/64, float16/32/64, bytes/np.bytes_/object (BYTES)"


def triton_data_type(dtype: Any, where: str) -> str:
    """``where`` names the model and tensor for the error message."""
    if any(dtype is t for t in _BYTES_LIKE):
        return "TYPE_STRING"
    if isinstance(dtype, str):
        key = dtype.upper()
        key = key[len("TYPE_") :] if key.startswith("TYPE_") else key
        if key in _BY_TRITON_NAME:
            return _BY_TRITON_NAME[key]
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype is not None:
        if np_dtype.kind in "OSU":
            return "TYPE_STRING"
        if np_dtype in _BY_NUMPY:
            return _BY_NUMPY[np_dtype]
    raise BuildError(f"{where}: dtype {dtype!r} is not supported by Triton; use one of {SUPPORTED}")
