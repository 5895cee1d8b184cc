"""Triton's data types: the ``DataType`` enum names (``TYPE_FP32``), the wire names (``FP32``) and numpy.

The table itself is the runtime's (:data:`repogen.runtime.conversion.NUMPY_DTYPES`, vendored into
every model, which imports only numpy); this module derives every other direction from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BuildError
from ..runtime.conversion import NUMPY_DTYPES

__all__ = ["SUPPORTED", "enum_name", "numpy_dtype", "triton_data_type", "wire_name"]

_STRING = "TYPE_STRING"
_BY_NUMPY = {dtype: name for name, dtype in NUMPY_DTYPES.items() if name != _STRING}


def wire_name(enum: str) -> str:
    """``TYPE_FP32`` → ``FP32``, ``TYPE_STRING`` → ``BYTES``: the datatype of the HTTP/gRPC protocol."""
    return "BYTES" if enum == _STRING else enum.removeprefix("TYPE_")


def enum_name(name: str) -> str | None:
    """``FP32``/``fp32``/``TYPE_FP32`` → ``TYPE_FP32``; ``BYTES``/``STRING`` → ``TYPE_STRING``; None if unknown."""
    key = name.upper().removeprefix("TYPE_")
    enum = _STRING if key in ("BYTES", "STRING") else f"TYPE_{key}"
    return enum if enum in NUMPY_DTYPES else None


def numpy_dtype(name: str) -> np.dtype[Any] | None:
    """The numpy dtype of a wire or enum name (``object`` for BYTES); None where numpy has none (BF16)."""
    enum = enum_name(name)
    return NUMPY_DTYPES[enum] if enum else None


_BYTES_LIKE = (bytes, np.bytes_, object, np.object_, str, np.str_)

SUPPORTED = "bool, (u)int8/16/32/64, float16/32/64, bytes/np.bytes_/object (BYTES)"


def triton_data_type(dtype: Any, where: str) -> str:
    """The enum name for a dtype a user wrote; ``where`` names the model and tensor for the error message."""
    if any(dtype is t for t in _BYTES_LIKE):
        return _STRING
    if isinstance(dtype, str) and (enum := enum_name(dtype)) is not None:
        return enum
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype is not None:
        if np_dtype.kind in "OSU":
            return _STRING
        if np_dtype in _BY_NUMPY:
            return _BY_NUMPY[np_dtype]
    raise BuildError(f"{where}: dtype {dtype!r} is not supported by Triton; use one of {SUPPORTED}")
