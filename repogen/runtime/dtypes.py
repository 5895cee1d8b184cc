"""Triton's data types: the one table the compiler and the runtime both read.

It lives on the runtime's side because the runtime is vendored into every model and imports nothing
of the compiler; ``repogen.triton.dtypes`` derives every direction the compiler needs from it.

Each type has Triton's enum name (``TYPE_FP32``, the config's), its wire name (``FP32``, the HTTP/gRPC
protocol's), its numpy dtype (None for ``TYPE_BF16``: numpy has no bfloat16, so such tensors travel
through DLPack only) and its *element name*, the name torch, cupy, jax and the array API give the
same type (``float32``, ``bfloat16``), by which a framework's tensor is checked against a declaration.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class DataType(NamedTuple):
    enum: str
    wire: str
    numpy: np.dtype[Any] | None
    element: str


STRING = "TYPE_STRING"
BF16 = "TYPE_BF16"

TABLE = (
    DataType("TYPE_BOOL", "BOOL", np.dtype(np.bool_), "bool"),
    DataType("TYPE_UINT8", "UINT8", np.dtype(np.uint8), "uint8"),
    DataType("TYPE_UINT16", "UINT16", np.dtype(np.uint16), "uint16"),
    DataType("TYPE_UINT32", "UINT32", np.dtype(np.uint32), "uint32"),
    DataType("TYPE_UINT64", "UINT64", np.dtype(np.uint64), "uint64"),
    DataType("TYPE_INT8", "INT8", np.dtype(np.int8), "int8"),
    DataType("TYPE_INT16", "INT16", np.dtype(np.int16), "int16"),
    DataType("TYPE_INT32", "INT32", np.dtype(np.int32), "int32"),
    DataType("TYPE_INT64", "INT64", np.dtype(np.int64), "int64"),
    DataType("TYPE_FP16", "FP16", np.dtype(np.float16), "float16"),
    DataType("TYPE_FP32", "FP32", np.dtype(np.float32), "float32"),
    DataType("TYPE_FP64", "FP64", np.dtype(np.float64), "float64"),
    DataType(BF16, "BF16", None, "bfloat16"),
    DataType(STRING, "BYTES", np.dtype(object), "bytes"),
)

BY_ENUM = {t.enum: t for t in TABLE}
NUMPY_DTYPES = {t.enum: t.numpy for t in TABLE if t.numpy is not None}
"""Enum name -> numpy dtype, for every type numpy can hold (all but BF16)."""


def element_name(dtype: Any) -> str:
    """The element name of any framework's dtype object: ``torch.float32``, ``np.dtype('float32')``,
    ``array_api_strict.float32`` and ``jnp.bfloat16`` all name their type last."""
    name = getattr(dtype, "name", None)  # numpy's dtype (cupy's and jax's too): 'float32'
    if not isinstance(name, str):
        name = str(dtype)  # torch.float32, array_api_strict.float32
    return name.rsplit(".", 1)[-1]


def element_bytes(enum: str) -> int | None:
    """Bytes per element of a Triton data type; None for BYTES, whose elements vary."""
    found = BY_ENUM.get(enum)
    if found is None or enum == STRING:
        return None
    return 2 if found.numpy is None else found.numpy.itemsize  # BF16: two bytes, as float16
