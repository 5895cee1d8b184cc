"""One home per Triton fact: data types derive from the runtime's table, one version-directory rule."""

from __future__ import annotations

import numpy as np
import pytest

from repogen.errors import BuildError
from repogen.runtime.contract import NUMPY_DTYPES, is_version_name
from repogen.server.client.infer import InferError, to_array
from repogen.triton.dtypes import enum_name, numpy_dtype, triton_data_type, wire_name


def test_dtypes_derive_from_the_runtime_table() -> None:
    for enum, dtype in NUMPY_DTYPES.items():
        assert enum_name(wire_name(enum)) == enum
        assert numpy_dtype(wire_name(enum)) == dtype == numpy_dtype(enum)
    assert (wire_name("TYPE_FP32"), wire_name("TYPE_STRING")) == ("FP32", "BYTES")
    assert enum_name("bytes") == enum_name("STRING") == "TYPE_STRING"
    assert numpy_dtype("BF16") is None and enum_name("FP8") is None


@pytest.mark.parametrize(
    ("dtype", "enum"),
    [(np.float32, "TYPE_FP32"), ("float16", "TYPE_FP16"), ("FP64", "TYPE_FP64"), ("TYPE_INT8", "TYPE_INT8"),
     (bytes, "TYPE_STRING"), (object, "TYPE_STRING"), (np.dtype("U3"), "TYPE_STRING"), (np.bool_, "TYPE_BOOL")],
)  # fmt: skip
def test_user_dtypes(dtype: object, enum: str) -> None:
    assert triton_data_type(dtype, "model 'M', input 'x'") == enum


def test_unsupported_dtype_names_where() -> None:
    with pytest.raises(BuildError, match=r"model 'M', input 'x': dtype .*complex64.* is not supported by Triton"):
        triton_data_type(np.complex64, "model 'M', input 'x'")


def test_infer_converts_with_the_same_table() -> None:
    assert to_array("a", [[1, 2]], "UINT16", [-1, 2]).dtype == np.uint16
    with pytest.raises(InferError, match="BF16, which numpy has no dtype for"):
        to_array("a", [1.0], "BF16", [-1])


@pytest.mark.parametrize(("name", "loads"), [("1", True), ("0", True), ("12", True), ("01", False), ("v1", False),
                                             ("", False), ("²", False), ("-1", False)])  # fmt: skip
def test_version_directories(name: str, loads: bool) -> None:
    assert is_version_name(name) is loads
