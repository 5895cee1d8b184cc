"""A stand-in for torch with a CUDA device, on the CPU, that records every copy between host and device and every
wait: what the runtime asks of a GPU, counted without one (tests/unit/test_transfers.py).

Device memory is host memory here, but a tensor knows where it "lives": crossing between ``cpu`` and ``cuda:N``
is a recorded copy (``h2d``, ``d2h``), joining tensors on the device is a recorded ``d2d`` copy, and each wait on a
stream or an event is a recorded ``sync``; a blocking copy from pageable memory to the device, or from the device
to the host, waits too (as CUDA's do). Views keep their base and byte offsets, so that ``data_ptr`` arithmetic
(rows of one batch lying one after another) holds as on a GPU. Only what the runtime and these tests use exists.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["FakeTensor", "installed", "torch"]


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def add(self, kind: str, what: str = "") -> None:
        self.events.append((kind, what))

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)

    def counts(self) -> dict[str, int]:
        return {kind: self.count(kind) for kind in ("h2d", "d2h", "d2d", "sync", "capsule")}

    def clear(self) -> None:
        self.events.clear()


LOG = Log()


class dtype:  # noqa: N801 - torch's name
    def __init__(self, numpy: np.dtype):
        self.numpy = np.dtype(numpy)

    def __repr__(self) -> str:
        return f"torch.{self.numpy.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dtype) and other.numpy == self.numpy

    def __hash__(self) -> int:
        return hash(self.numpy)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


_DTYPES = {
    name: dtype(np.dtype(name)) for name in ("uint8", "int8", "int32", "int64", "float16", "float32", "float64", "bool")
}


def _as_dtype(numpy: np.dtype) -> dtype:
    return _DTYPES.get(np.dtype(numpy).name) or dtype(numpy)


class device:  # noqa: N801 - torch's name
    def __init__(self, name: Any):
        name = str(name)
        self.type, _, index = name.partition(":")
        self.index = int(index) if index else (0 if self.type == "cuda" else None)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


class FakeTensor:
    """A contiguous tensor: ``storage`` (a flat uint8 numpy array) from byte ``offset``, of ``dtype`` and ``shape``."""

    requires_grad = False

    def __init__(
        self,
        storage: np.ndarray,
        offset: int,
        dt: dtype,
        shape: tuple[int, ...],
        where: device,
        pinned=False,
        base=None,
    ):
        self.storage, self.offset, self.dtype, self._shape = storage, offset, dt, tuple(int(s) for s in shape)
        self.device, self.pinned, self._base = where, pinned, base

    # -- what a tensor is --
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return int(np.prod(self._shape))

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return int(self.storage.ctypes.data) + self.offset

    def is_contiguous(self) -> bool:
        return True

    def contiguous(self) -> FakeTensor:
        return self

    def detach(self) -> FakeTensor:
        return self

    def untyped_storage(self) -> Any:
        return types.SimpleNamespace(data_ptr=lambda: int(self.storage.ctypes.data))

    def __len__(self) -> int:
        return self._shape[0]

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self.device.index) if self.device.type == "cuda" else (1, 0)

    def __dlpack__(self, **_: Any) -> Any:
        if self.device.type == "cuda":
            raise BufferError("device memory: not readable by numpy")
        return self._array().__dlpack__()

    def _array(self) -> np.ndarray:
        nbytes = self.numel() * self.element_size()
        return self.storage[self.offset : self.offset + nbytes].view(self.dtype.numpy).reshape(self._shape)

    def _root(self) -> FakeTensor:
        return self if self._base is None else self._base

    def _view(self, offset: int, dt: dtype, shape: tuple[int, ...]) -> FakeTensor:
        return FakeTensor(self.storage, offset, dt, shape, self.device, self.pinned, self._root())

    # -- views --
    def __getitem__(self, key: Any) -> FakeTensor:
        if isinstance(key, tuple):
            assert all(k is Ellipsis for k in key[1:]), key
            key = key[0]
        assert isinstance(key, slice) and key.step in (None, 1), key
        start, stop, _ = key.indices(self._shape[0])
        row = self.element_size() * int(np.prod(self._shape[1:]))
        return self._view(self.offset + start * row, self.dtype, (max(0, stop - start), *self._shape[1:]))

    def view(self, *what: Any) -> FakeTensor:
        if len(what) == 1 and isinstance(what[0], dtype):
            dt = what[0]
            last = self._shape[-1] * self.element_size() // dt.itemsize if self._shape else 1
            return self._view(self.offset, dt, (*self._shape[:-1], last))
        shape = tuple(what[0]) if len(what) == 1 and isinstance(what[0], (tuple, list)) else tuple(what)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            shape = tuple(self.numel() // max(known, 1) if s == -1 else s for s in shape)
        assert int(np.prod(shape)) == self.numel(), (shape, self._shape)
        return self._view(self.offset, self.dtype, shape)

    reshape = view

    def narrow(self, axis: int, start: int, length: int) -> FakeTensor:
        assert axis == 0
        return self[start : start + length]

    # -- copies --
    def to(self, where: Any, non_blocking: bool = False) -> FakeTensor:
        if isinstance(where, dtype):
            return _made(self._array().astype(where.numpy), self.device)
        target = device(where)
        if target == self.device:
            return self
        _record_crossing(self.device, target, self.pinned, non_blocking)
        return _made(self._array().copy(), target)

    def cuda(self) -> FakeTensor:
        return self.to("cuda:0")

    def cpu(self) -> FakeTensor:
        return self.to("cpu")

    def numpy(self) -> np.ndarray:
        assert self.device.type == "cpu", "numpy() of a device tensor"
        return self._array()

    def copy_(self, source: FakeTensor, non_blocking: bool = False) -> FakeTensor:
        if source.device != self.device:
            _record_crossing(source.device, self.device, self.pinned or source.pinned, non_blocking)
        elif self.device.type == "cuda":
            LOG.add("d2d", "copy_")
        self._array()[...] = source._array()
        return self

    def clone(self) -> FakeTensor:
        if self.device.type == "cuda":
            LOG.add("d2d", "clone")
        return _made(self._array().copy(), self.device)

    def float(self) -> FakeTensor:
        return _made(self._array().astype(np.float32), self.device)

    def tolist(self) -> Any:
        return self._array().tolist()

    # -- arithmetic: computed where the tensor lives, nothing crosses --
    def _binary(self, other: Any, op: Any) -> FakeTensor:
        if isinstance(other, FakeTensor):
            assert other.device == self.device, "operands on different devices"
            other = other._array()
        return _made(op(self._array(), other), self.device)

    def __mul__(self, other: Any) -> FakeTensor:
        return self._binary(other, np.multiply)

    __rmul__ = __mul__

    def __add__(self, other: Any) -> FakeTensor:
        return self._binary(other, np.add)

    __radd__ = __add__

    def __sub__(self, other: Any) -> FakeTensor:
        return self._binary(other, np.subtract)


FakeTensor.__module__ = "torch"  # framework_of finds the framework by the type's module


def _record_crossing(source: device, target: device, pinned: bool, non_blocking: bool) -> None:
    kind = (
        "h2d"
        if target.type == "cuda" and source.type == "cpu"
        else "d2h"
        if source.type == "cuda" and target.type == "cpu"
        else "d2d"
    )
    LOG.add(kind, "async" if non_blocking and pinned else "blocking")
    if not (non_blocking and pinned):
        LOG.add("sync", f"blocking {kind}")  # pageable memory, or a blocking copy: the host waits for it


def _made(array: np.ndarray, where: device) -> FakeTensor:
    array = np.ascontiguousarray(array)
    storage = array.reshape(-1).view(np.uint8) if array.size else np.zeros(0, np.uint8)
    return FakeTensor(storage, 0, _as_dtype(array.dtype), array.shape, where)


# -- the module's functions --


def empty(*shape: Any, dtype: dtype = _DTYPES["float32"], pin_memory: bool = False, device: Any = "cpu") -> FakeTensor:  # noqa: A002
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
    tensor = _made(np.zeros(shape, dtype.numpy), globals()["device"](device))
    tensor.pinned = pin_memory
    return tensor


def from_numpy(array: np.ndarray) -> FakeTensor:
    storage = array.reshape(-1).view(np.uint8) if array.size else np.zeros(0, np.uint8)
    return FakeTensor(storage, 0, _as_dtype(array.dtype), array.shape, device("cpu"))


def cat(parts: list[FakeTensor]) -> FakeTensor:
    if parts[0].device.type == "cuda":
        LOG.add("d2d", "cat")
    return _made(np.concatenate([p._array() for p in parts]), parts[0].device)


def full(shape: Any, fill: Any, dtype: dtype | None = None, device: Any = "cpu") -> FakeTensor:  # noqa: A002
    return _made(np.full(shape, fill, dtype=None if dtype is None else dtype.numpy), globals()["device"](device))


def from_dlpack(capsule: Any) -> FakeTensor:
    return capsule.tensor if isinstance(capsule, Capsule) else capsule


class Capsule:
    def __init__(self, tensor: FakeTensor):
        self.tensor = tensor


class _Stream:
    def __init__(self, where: Any):
        self.device = str(where)

    def synchronize(self) -> None:
        LOG.add("sync", f"stream {self.device}")


class _Event:
    def __init__(self) -> None:
        self.recorded = False

    def record(self, stream: Any = None) -> None:
        self.recorded = True

    def synchronize(self) -> None:
        LOG.add("sync", "event")


def _to_dlpack(tensor: FakeTensor) -> Capsule:
    LOG.add("capsule", str(tensor.device))
    return Capsule(tensor)


cuda = types.SimpleNamespace(
    set_device=lambda index: None,
    current_stream=lambda where=None: _Stream(where),
    Event=_Event,
    is_available=lambda: True,
    empty_cache=lambda: LOG.add("empty_cache"),
    OutOfMemoryError=type("OutOfMemoryError", (RuntimeError,), {}),
)
utils = types.SimpleNamespace(dlpack=types.SimpleNamespace(to_dlpack=_to_dlpack))
bfloat16 = dtype(np.dtype("float32"))  # never the element of a tensor here
for _name, _dt in _DTYPES.items():
    globals()[_name] = _dt
torch = sys.modules[__name__]


@contextlib.contextmanager
def installed() -> Iterator[Log]:
    """This module as ``torch`` for the runtime (``sys.modules``), the framework caches cleared on both sides."""
    from repogen.runtime import frameworks

    saved = sys.modules.get("torch")
    sys.modules["torch"] = torch
    frameworks._BY_TYPE.clear()
    LOG.clear()
    try:
        yield LOG
    finally:
        frameworks._BY_TYPE.clear()
        if saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = saved
