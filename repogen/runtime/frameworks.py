"""The user's tensor framework (torch, cupy, or any array-API library), reached by duck typing.

The runtime imports a framework only when the model already did (a tensor of it came back) or declared
it (``ModelConfig(tensors="torch")``): a tensor's framework is read off its type's module, which is in
``sys.modules`` once such a tensor exists. Each :class:`Framework` offers the few operations the
runtime needs on that framework's own tensors, on their own device: merging and cutting batches,
casting and making contiguous what goes out, and taking what comes in without a copy.
"""

from __future__ import annotations

import importlib
import sys
from math import prod
from typing import Any

import numpy as np

from .contract import element_name
from .errors import InferenceError

# DLPack's device types (dlpack.h) whose memory host code can read; kDLCUDA (2), device memory, is not one
KDL_CPU, KDL_CUDA_HOST = 1, 3


def on_cpu(value: Any) -> bool:
    """Whether host code can read ``value``'s memory (CPU or CUDA-pinned host memory)."""
    device = getattr(value, "__dlpack_device__", None)
    return device is None or device()[0] in (KDL_CPU, KDL_CUDA_HOST)


class Framework:
    """The operations the runtime needs, as a framework's own array namespace spells them."""

    name = "array API"
    batch_transfers = False
    """Whether it offers what runtime/transfers.py moves a batch with (pinned memory, asynchronous copies): torch."""

    def __init__(self, module: Any):
        self.xp = module

    def element(self, value: Any) -> str:
        return element_name(value.dtype)

    def placed(self, value: Any) -> tuple[str, int] | None:
        """(device, byte count) of a tensor in device memory, None in host memory (asked where ``batch_transfers``)."""
        raise NotImplementedError(self.name)

    def output(self, value: Any, plan: Any) -> Any:
        """``value`` checked against ``plan`` (a conversion.OutputPlan, typed Any: conversion imports this module)
        like an array and made right where it lives: cast and made contiguous on its own device, never through the
        host. BYTES, which no framework holds, go through numpy."""
        if plan.is_bytes:
            return plan.convert(self.host(value))
        try:
            element = self.element(value)
            if element and element != plan.element:
                if plan.strict:
                    plan.fail(f"dtype {plan.element}, found {value.dtype}")
                value = self.cast(value, plan.element)
            if plan.strict:
                plan.check_shape(self.shape(value))
            return self.contiguous(value)
        except InferenceError:
            raise
        except Exception as exc:  # a cast the framework refuses
            raise plan.unconvertible(value, exc) from None

    def shape(self, value: Any) -> tuple[int, ...]:
        return tuple(value.shape)

    def cast(self, value: Any, element: str) -> Any:
        return self.xp.astype(value, getattr(self.xp, element))

    def contiguous(self, value: Any) -> Any:
        return value

    def exportable(self, value: Any) -> Any:
        """``value`` as ``__dlpack__`` may hand it out."""
        return value

    def concat(self, parts: list[Any]) -> Any:
        return self.xp.concat(parts, axis=0)

    def rows(self, value: Any, index: np.ndarray) -> Any:
        """The rows ``index`` (a numpy array of positions) of ``value``, in that order."""
        return self.xp.take(value, self.xp.asarray(index), axis=0)

    def full(self, shape: tuple[int, ...], fill: Any, like: Any) -> Any:
        return self.xp.full(shape, fill, dtype=like.dtype)

    def copy(self, value: Any) -> Any:
        return self.xp.asarray(value, copy=True)

    def host(self, value: Any) -> np.ndarray:
        """A numpy array of ``value`` in host memory (one copy where it lives on a device)."""
        return np.asarray(np.from_dlpack(value) if on_cpu(value) else value)

    def adopt(self, array: np.ndarray, device: str) -> Any:
        """A numpy array as this framework's tensor on ``device`` (``cpu`` or ``cuda:N``)."""
        return self.xp.asarray(array)

    def like(self, array: np.ndarray, other: Any) -> Any:
        """A numpy array as this framework's tensor on the device ``other`` (one of its tensors) lives on."""
        return self.xp.asarray(array, device=other.device)

    def from_backend(self, tensor: Any) -> Any:
        """A python_backend tensor as this framework's, without a copy (the object has ``__dlpack__``)."""
        return self.xp.from_dlpack(tensor)


class Torch(Framework):
    name = "torch"

    def __init__(self, module: Any):
        super().__init__(module)
        self._dtypes: dict[np.dtype, Any] = {}
        self._elements: dict[Any, str] = {}  # torch's dtype -> its element name (a stream asks once a token)

    def element(self, value: Any) -> str:
        dtype = value.dtype
        found = self._elements.get(dtype)
        if found is None:
            found = self._elements[dtype] = element_name(dtype)
        return found

    def cast(self, value: Any, element: str) -> Any:
        return value.to(getattr(self.xp, element))

    def contiguous(self, value: Any) -> Any:
        return value if value.is_contiguous() else value.contiguous()

    def exportable(self, value: Any) -> Any:
        return value.detach() if value.requires_grad else value  # DLPack refuses tensors that keep a graph

    def concat(self, parts: list[Any]) -> Any:
        joined = self._joined(parts) if len(parts) > 1 else None
        return self.xp.cat(parts) if joined is None else joined

    def _joined(self, parts: list[Any]) -> Any:
        """Requests' rows that already lie one after another in one buffer (runtime/transfers.py staged them so) as
        one view of them all, without a copy; None where they do not."""
        first = parts[0]
        base, trailing, end, rows = first._base, first.shape[1:], first.data_ptr(), 0
        if base is None:
            return None
        for part in parts:
            if part._base is not base or part.dtype != first.dtype or part.shape[1:] != trailing:
                return None
            if part.data_ptr() != end or not part.is_contiguous():
                return None
            end += part.numel() * part.element_size()
            rows += part.shape[0]
        span = self.span(first, end - first.data_ptr())
        return None if span is None else span.view(first.dtype).view((rows, *trailing))

    def rows(self, value: Any, index: np.ndarray) -> Any:
        return value.index_select(0, self.xp.from_numpy(index).to(value.device))

    def full(self, shape: tuple[int, ...], fill: Any, like: Any) -> Any:
        return self.xp.full(shape, fill, dtype=like.dtype, device=like.device)

    def copy(self, value: Any) -> Any:
        return value.clone()

    def host(self, value: Any) -> np.ndarray:
        return value.detach().cpu().numpy()  # type: ignore[no-any-return]

    def adopt(self, array: np.ndarray, device: str) -> Any:
        tensor = self.xp.from_numpy(array if array.flags.writeable else array.copy())
        return tensor if device == "cpu" else tensor.to(device)

    def like(self, array: np.ndarray, other: Any) -> Any:
        return self.adopt(array, str(other.device))

    def from_backend(self, tensor: Any) -> Any:
        to_dlpack = getattr(tensor, "to_dlpack", None)  # Triton's own PyTorch handler's idiom, where it is one
        return self.xp.from_dlpack(to_dlpack() if to_dlpack is not None else tensor)

    # -- a batch's crossings (runtime/transfers.py): pinned host memory, asynchronous copies, one sync ---------

    batch_transfers = True

    def pinned(self, nbytes: int) -> tuple[Any, np.ndarray]:
        """Page-locked host memory of ``nbytes`` bytes, as a uint8 tensor and a numpy view of the same bytes."""
        tensor = self.xp.empty(nbytes, dtype=self.xp.uint8, pin_memory=True)
        return tensor, tensor.numpy()

    def upload(self, host: Any, device: str) -> Any:
        """Pinned bytes copied to ``device`` without waiting for the copy (it is ordered on the device's stream)."""
        return host.to(device, non_blocking=True)

    def download(self, into: Any, source: Any) -> None:
        """Device bytes copied into pinned host bytes without waiting; :meth:`synchronize` says when they are there."""
        into.copy_(source, non_blocking=True)

    def raw(self, value: Any) -> Any:
        """A contiguous tensor's bytes, as a flat uint8 view on its device."""
        return value.reshape(-1).view(self.xp.uint8)

    def typed(self, raw: Any, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> Any:
        """Bytes ``offset``.. of ``raw`` viewed as a tensor of numpy's ``dtype`` and ``shape`` (no copy)."""
        torch_dtype = self._dtypes.get(dtype)
        if torch_dtype is None:
            torch_dtype = self._dtypes[dtype] = self.xp.from_numpy(np.empty(0, dtype)).dtype
        return raw[offset : offset + dtype.itemsize * prod(shape)].view(torch_dtype).view(shape)

    def span(self, first: Any, nbytes: int) -> Any:
        """The ``nbytes`` bytes of device memory from ``first``'s start, as one view, where one contiguous tensor
        holds them (rows of one batch); None where ``first`` is not a view into one."""
        base = first if first._base is None else first._base
        start = first.data_ptr() - base.data_ptr()
        if not base.is_contiguous() or start < 0 or start + nbytes > base.numel() * base.element_size():
            return None
        return self.raw(base)[start : start + nbytes]

    def placed(self, value: Any) -> tuple[str, int] | None:
        return None if (device := value.device).type == "cpu" else (str(device), value.nbytes)

    def address(self, value: Any) -> tuple[str, int, int]:
        """(device, first byte's address, byte count) of a contiguous tensor."""
        return str(value.device), value.data_ptr(), value.numel() * value.element_size()

    def synchronize(self, device: str) -> None:
        """Wait for everything queued on ``device`` (its current stream's work and any other's): the one wait of a
        batch, in one call."""
        self.xp.cuda.synchronize(device)

    def marker(self, device: str) -> Any:
        """An event recorded on ``device``'s current stream now: ``marker.synchronize()`` waits for what came before."""
        event = self.xp.cuda.Event()
        event.record(self.xp.cuda.current_stream(self.xp.device(device)))
        return event

    def capsule(self, value: Any) -> Any:
        """A DLPack capsule of ``value``: python_backend's ``from_dlpack`` then neither asks its stream nor waits."""
        return self.xp.utils.dlpack.to_dlpack(value)


class Cupy(Framework):
    name = "cupy"

    def cast(self, value: Any, element: str) -> Any:
        return value.astype(element)

    def contiguous(self, value: Any) -> Any:
        return value if value.flags.c_contiguous else self.xp.ascontiguousarray(value)

    def concat(self, parts: list[Any]) -> Any:
        return self.xp.concatenate(parts)

    def rows(self, value: Any, index: np.ndarray) -> Any:
        return value[self.xp.asarray(index)]

    def copy(self, value: Any) -> Any:
        return value.copy()

    def host(self, value: Any) -> np.ndarray:
        return value.get()  # type: ignore[no-any-return]

    def adopt(self, array: np.ndarray, device: str) -> Any:
        with self.xp.cuda.Device(device_index(device)):
            return self.xp.asarray(array)

    def like(self, array: np.ndarray, other: Any) -> Any:
        with other.device:
            return self.xp.asarray(array)


class DLPackOnly(Framework):
    """A tensor that offers DLPack and nothing else (a python_backend tensor a BLS call returned on a GPU)."""

    name = "DLPack"

    def __init__(self) -> None:
        super().__init__(None)

    def element(self, value: Any) -> str:
        dtype = getattr(value, "dtype", None)
        return element_name(dtype) if dtype is not None else ""  # "": not known here; the server checks it

    def shape(self, value: Any) -> tuple[int, ...]:
        shape = value.shape
        return tuple(shape() if callable(shape) else shape)  # python_backend's tensors: a method

    def cast(self, value: Any, element: str) -> Any:
        return value  # nothing to cast with: the server checks the data type it receives

    def host(self, value: Any) -> np.ndarray:
        if on_cpu(value):
            return np.from_dlpack(value)
        return host_copy(value)


def device_index(device: str) -> int:
    """``cuda:1`` -> 1; ``cuda`` and ``cpu`` -> 0."""
    _, _, index = device.partition(":")
    return int(index) if index.isdigit() else 0


_BY_MODULE = {"torch": Torch, "cupy": Cupy}
FRAMEWORK_MODULES = tuple(_BY_MODULE)
"""The frameworks the runtime knows by their module, whose device it sets (runtime/devices.py)."""
_BY_TYPE: dict[type, Framework | None] = {}


def framework_of(value: Any) -> Framework | None:
    """The framework of a tensor that is not a numpy array, found once per type; None for anything else."""
    kind = type(value)
    try:
        return _BY_TYPE[kind]
    except KeyError:
        pass
    found: Framework | None = None
    if not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__"):
        # the framework whose class this one is, or derives from (a torch.Tensor subclass of the user's)
        top = next((t for t in (k.__module__.partition(".")[0] for k in kind.__mro__) if t in _BY_MODULE), "")
        namespace = getattr(value, "__array_namespace__", None)
        if top in _BY_MODULE and top in sys.modules:
            found = _BY_MODULE[top](sys.modules[top])
        elif namespace is not None:
            found = Framework(namespace())
        else:
            found = DLPackOnly()
    _BY_TYPE[kind] = found
    return found


def framework_named(name: str) -> Framework:
    """The framework a model declared (``tensors="torch"``): imported here, as the user's own code would."""
    module = importlib.import_module(name)
    top = name.partition(".")[0]
    if top in _BY_MODULE:
        return _BY_MODULE[top](module)
    return Framework(module)


def host_copy(tensor: Any) -> np.ndarray:
    """A GPU tensor (a python_backend tensor, or any ``__dlpack__`` object) copied into a numpy array, through
    whichever framework this process has loaded; numpy itself cannot read device memory."""
    for name in FRAMEWORK_MODULES:
        if name in sys.modules:
            framework = _BY_MODULE[name](sys.modules[name])
            return framework.host(framework.from_backend(tensor))
    raise TypeError(
        "the tensor lives in GPU memory and numpy cannot read it; no framework that can copy it to the host "
        "(torch, cupy) is loaded in this model"
    )
