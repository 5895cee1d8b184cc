"""DLPack capsules read as python_backend's C++ reads them (``dlpack.h``'s structs, through ctypes).

python_backend's ``Tensor.from_dlpack`` takes either a capsule or an object with ``__dlpack__``; what it does next
depends on the capsule's device and strides (src/pb_tensor.cc, r24.10). The stand-in of ``pb_utils`` reads the
same fields here, with the standard library only.
"""

from __future__ import annotations

import ctypes
from typing import Any

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
_NAME = b"dltensor"


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_capsule(value: Any) -> bool:
    return type(value).__name__ == "PyCapsule"


def _managed(capsule: Any) -> _Managed:
    if not _is_valid(capsule, _NAME):
        raise ValueError("not an unused DLPack capsule (its name is not 'dltensor': it was consumed already)")
    return _Managed.from_address(_get_pointer(capsule, _NAME))


def device(capsule: Any) -> tuple[int, int]:
    """(DLPack device type, device id) of an unused capsule."""
    found = _managed(capsule).dl_tensor.device
    return int(found.device_type), int(found.device_id)


def set_device(capsule: Any, device_type: int, device_id: int) -> None:
    """Rewrite where the capsule says its memory is (an emulated GPU's memory is host memory that says so)."""
    found = _managed(capsule).dl_tensor.device
    found.device_type, found.device_id = device_type, device_id


def c_contiguous(capsule: Any) -> bool:
    """python_backend's check (``PbTensor::FromDLPackCapsule``): C order, dimensions of size 1 aside."""
    tensor = _managed(capsule).dl_tensor
    if not tensor.strides:
        return True
    expected = 1
    for axis in reversed(range(tensor.ndim)):
        size = tensor.shape[axis]
        if size != 1:
            if tensor.strides[axis] != expected:
                return False
            expected *= size
    return True


def byte_size(capsule: Any) -> int:
    tensor = _managed(capsule).dl_tensor
    count = 1
    for axis in range(tensor.ndim):
        count *= tensor.shape[axis]
    return count * tensor.dtype.bits * tensor.dtype.lanes // 8
