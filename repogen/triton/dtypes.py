"""Triton's data types as the compiler reads them: enum names (``TYPE_FP32``), wire names (``FP32``), numpy.

The table itself is :mod:`repogen.runtime.contract` (vendored into every model, which imports only numpy);
this module derives every direction the compiler needs from it and reads the dtypes users write.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import BuildError
from ..runtime.contract import BF16, BY_ENUM, NUMPY_DTYPES, STRING, TABLE, element_name

__all__ = ["BF16", "NUMPY_DTYPES", "STRING", "SUPPORTED", "enum_name", "numpy_dtype", "triton_data_type", "wire_name"]

_BY_NUMPY = {t.numpy: t.enum for t in TABLE if t.numpy is not None and t.enum != STRING}
_BY_WIRE = {t.wire: t.enum for t in TABLE}
_BY_ELEMENT = {t.element: t.enum for t in TABLE if t.enum != STRING}


def wire_name(enum: str) -> str:
    """``TYPE_FP32`` → ``FP32``, ``TYPE_STRING`` → ``BYTES``: the datatype of the HTTP/gRPC protocol."""
    return BY_ENUM[enum].wire


def enum_name(name: str) -> str | None:
    """``FP32``/``fp32``/``TYPE_FP32`` → ``TYPE_FP32``; ``BYTES``/``STRING`` → ``TYPE_STRING``; None if unknown."""
    key = name.upper().removeprefix("TYPE_")
    if key == "STRING":
        return STRING
    return _BY_WIRE.get(key)


def numpy_dtype(name: str) -> np.dtype[Any] | None:
    """The numpy dtype of a wire or enum name (``object`` for BYTES); None where numpy has none (BF16)."""
    enum = enum_name(name)
    return NUMPY_DTYPES.get(enum) if enum else None


_BYTES_LIKE = (bytes, np.bytes_, object, np.object_, str, np.str_)

SUPPORTED = "bool, (u)int8/16/32/64, float16/32/64, bfloat16, bytes/np.bytes_/object (BYTES)"


def triton_data_type(dtype: Any, where: str) -> str:
    """The enum name for a dtype a user wrote; ``where`` names the model and tensor for the error message.

    numpy's dtypes and scalar types, Triton's names (``"FP32"``, ``"BF16"``), element names (``"bfloat16"``)
    and a framework's dtype objects (``torch.bfloat16``) are all accepted.
    """
    if any(dtype is t for t in _BYTES_LIKE):
        return STRING
    if isinstance(dtype, str) and (enum := enum_name(dtype) or _BY_ELEMENT.get(dtype.lower())) is not None:
        return enum
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype is not None:
        if np_dtype.kind in "OSU":
            return STRING
        if np_dtype in _BY_NUMPY:
            return _BY_NUMPY[np_dtype]
    if not isinstance(dtype, str) and (enum := _BY_ELEMENT.get(element_name(dtype))) is not None:
        return enum  # a framework's dtype object: torch.float32, torch.bfloat16, ml_dtypes.bfloat16
    raise BuildError(f"{where}: dtype {dtype!r} is not supported by Triton; use one of {SUPPORTED}")
