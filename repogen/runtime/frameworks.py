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
from typing import Any

import numpy as np

from .dtypes import element_name

# DLPack's device types (dlpack.h) whose memory host code can read; kDLCUDA (2), device memory, is not one
KDL_CPU, KDL_CUDA_HOST = 1, 3


def on_cpu(value: Any) -> bool:
    """Whether host code can read ``value``'s memory (CPU or CUDA-pinned host memory)."""
    device = getattr(value, "__dlpack_device__", None)
    return device is None or device()[0] in (KDL_CPU, KDL_CUDA_HOST)


class Framework:
    """The operations the runtime needs, as a framework's own array namespace spells them."""

    name = "array API"

    def __init__(self, module: Any):
        self.xp = module

    def element(self, value: Any) -> str:
        return element_name(value.dtype)

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

    def cast(self, value: Any, element: str) -> Any:
        return value.to(getattr(self.xp, element))

    def contiguous(self, value: Any) -> Any:
        return value if value.is_contiguous() else value.contiguous()

    def exportable(self, value: Any) -> Any:
        return value.detach() if value.requires_grad else value  # DLPack refuses tensors that keep a graph

    def concat(self, parts: list[Any]) -> Any:
        return self.xp.cat(parts)

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
        top = kind.__module__.partition(".")[0]
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


def use_device(device: str, imports: Any = ()) -> None:
    """On a KIND_GPU instance, make ``cuda`` mean the instance's own GPU before the user's code runs.

    The backend stub sets no CUDA device, so without this ``torch.device("cuda")`` (and cupy's default
    device) would be GPU 0 in every instance, whatever ``gpus=[...]`` said. Only frameworks the model
    loaded, or that the build recorded it importing (``imports``), are touched.
    """
    if not device.startswith("cuda"):
        return
    index = device_index(device)
    for name in _BY_MODULE:
        module = sys.modules.get(name)
        if module is None and name in imports:
            module = importlib.import_module(name)
        if module is None:
            continue
        if name == "torch":
            module.cuda.set_device(index)
        else:
            module.cuda.Device(index).use()


def host_copy(tensor: Any) -> np.ndarray:
    """A GPU tensor (a python_backend tensor, or any ``__dlpack__`` object) copied into a numpy array, through
    whichever framework this process has loaded; numpy itself cannot read device memory."""
    for name in ("torch", "cupy"):
        if name in sys.modules:
            framework = _BY_MODULE[name](sys.modules[name])
            return framework.host(framework.from_backend(tensor))
    raise TypeError(
        "the tensor lives in GPU memory and numpy cannot read it; no framework that can copy it to the host "
        "(torch, cupy) is loaded in this model"
    )
