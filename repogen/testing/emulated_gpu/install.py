"""``emulated()``: torch's CPU build with emulated GPUs, for as long as the context lasts.

torch's own functions that would refuse a CUDA device on a CPU build are wrapped (factories given ``device="cuda"``
or ``pin_memory=True``, ``Tensor.to``/``cuda``/``pin_memory``, ``from_dlpack``/``to_dlpack``) and ``torch.cuda``'s
streams, events, devices and memory functions answer for the emulated devices (device.py). Everything is put back
when the context ends.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

from . import copies
from .device import GPU, Emulator, Event, Stream, api
from .tensor import HOST, ORIGINAL, PINNED, allocate, place_of, real, stream_of

_FACTORIES = (
    "empty", "zeros", "ones", "full", "tensor", "as_tensor", "arange", "rand", "randn", "randint", "empty_strided",
    "eye", "linspace",
)  # fmt: skip


class CudaStream:
    """``torch.cuda.Stream`` over an emulated stream."""

    @api
    def __init__(self, device: Any = None, priority: int = 0, *, emulated: Stream | None = None):
        if emulated is None:
            index = GPU.current_device() if device is None else copies.target_place(torch.device("cuda", device) if (
                isinstance(device, int)) else device)  # fmt: skip
            emulated = GPU.device(index).new_stream()
        self._emulated = emulated

    @property
    @api
    def cuda_stream(self) -> int:
        return self._emulated.handle

    @property
    @api
    def device(self) -> torch.device:
        return torch.device("cuda", self._emulated.device.index)

    @api
    def synchronize(self) -> None:
        GPU.count("sync")
        self._emulated.land()

    @api
    def wait_event(self, event: Event) -> None:
        event.wait(self)

    @api
    def wait_stream(self, stream: CudaStream) -> None:
        event = Event()
        event.record(stream)
        self.wait_event(event)

    @api
    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    @api
    def query(self) -> bool:
        return not self._emulated.pending

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CudaStream) and other._emulated is self._emulated

    def __hash__(self) -> int:
        return hash(self._emulated.handle)

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:{self._emulated.device.index} cuda_stream={self.cuda_stream:#x}>"


class _Context:
    """A ``with`` block of torch.cuda's (``stream(s)``, ``device(d)``) whose entry and exit are tensor-API calls."""

    def __init__(self, made: Any):
        self.made = made

    @api
    def __enter__(self) -> Any:
        return self.made.__enter__()

    @api
    def __exit__(self, *exc: Any) -> Any:
        return self.made.__exit__(*exc)


@contextlib.contextmanager
def stream_context(stream: CudaStream | None) -> Iterator[CudaStream | None]:
    """``torch.cuda.stream(s)``: ``s`` current on its device (and that device current) inside the block."""
    if stream is None:
        yield None
        return
    before_device = GPU.current_device()
    GPU.set_device(stream._emulated.device.index)
    before = GPU.use(stream._emulated)
    try:
        yield stream
    finally:
        GPU.use(before)
        GPU.set_device(before_device)


@contextlib.contextmanager
def device_context(device: Any) -> Iterator[None]:
    before = GPU.current_device()
    if device is not None and device != -1:
        GPU.set_device(_index(device))
    try:
        yield
    finally:
        GPU.set_device(before)


def _index(device: Any) -> int:
    if isinstance(device, int):
        return device
    found = torch.device(device)
    return GPU.current_device() if found.index is None else found.index


def _synchronize(device: Any = None) -> None:
    GPU.count("sync")
    GPU.device(None if device is None else _index(device)).synchronize()


def _empty_cache() -> None:
    GPU.count("empty_cache")
    for device in GPU.devices:
        device.cached = 0


def _host_empty_cache() -> None:
    GPU.count("host empty_cache")
    GPU.pinned_cached = 0


def _cuda_namespace() -> dict[str, Any]:
    """torch.cuda's functions, each a tensor-API call, and its classes (whose methods are)."""

    def index(device: Any = None) -> int:
        return GPU.current_device() if device is None else _index(device)

    functions: dict[str, Callable[..., Any]] = {
        "is_available": lambda: True, "device_count": lambda: len(GPU.devices), "is_initialized": lambda: True,
        "current_device": GPU.current_device, "set_device": lambda device: GPU.set_device(_index(device)),
        "current_stream": lambda device=None: CudaStream(emulated=GPU.current(index(device))),
        "default_stream": lambda device=None: CudaStream(emulated=GPU.device(index(device)).legacy),
        "ExternalStream": lambda handle, device=None: CudaStream(emulated=GPU.by_handle(handle)),
        "stream": lambda stream: _Context(stream_context(stream)),
        "device": lambda device: _Context(device_context(device)),
        "synchronize": _synchronize, "empty_cache": _empty_cache,
        "memory_allocated": lambda device=None: GPU.device(index(device)).allocated,
        "max_memory_allocated": lambda device=None: GPU.device(index(device)).peak,
        "memory_reserved": lambda device=None: GPU.device(index(device)).allocated + GPU.device(index(device)).cached,
        "reset_peak_memory_stats": lambda device=None: setattr(GPU.device(index(device)), "peak",
                                                               GPU.device(index(device)).allocated),
        "mem_get_info": lambda device=None: (GPU.device(index(device)).capacity - GPU.device(index(device)).allocated,
                                             GPU.device(index(device)).capacity),
        "get_device_name": lambda device=None: "Emulated GPU (repogen.testing.emulated_gpu)",
    }  # fmt: skip
    return {name: api(function) for name, function in functions.items()} | {"Stream": CudaStream, "Event": Event}


def _factory(name: str) -> Any:
    made = ORIGINAL[name]

    @functools.wraps(made)
    def factory(*args: Any, **kwargs: Any) -> Any:
        return GPU.api(_made, made, args, kwargs)

    factory._emulated_api = lambda *args, **kwargs: _made(made, args, kwargs)  # type: ignore[attr-defined]
    return factory


def _made(made: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    device = kwargs.get("device")
    pin = kwargs.pop("pin_memory", False)
    if device is not None and torch.device(device).type not in ("cpu", "cuda"):  # meta, ...: torch's own
        return made(*args, **kwargs)
    where = HOST if device is None else copies.target_place(device)
    if where == HOST and not pin:
        return made(*args, **kwargs)
    kwargs["device"] = "cpu"
    host = made(*args, **kwargs)
    place = PINNED if where == HOST else where
    if place == PINNED and not pin:
        return host
    out = allocate(place, host.size(), host.stride(), host.dtype, host.requires_grad)
    if place == PINNED:
        _fill(out, host)
    elif name_is_empty(made):
        pass  # torch.empty on a device: what it holds is whatever was there (poison here)
    else:  # a kernel filling it, queued on the device's current stream
        stream_of(place).enqueue(lambda: _fill(out, host), f"{made.__name__} kernel")
        GPU.count("kernels")
    return out


def _fill(out: torch.Tensor, host: torch.Tensor) -> None:
    with torch.no_grad():  # a factory's kernel, not an operation a graph records (requires_grad=True leaves too)
        real(torch.Tensor.copy_, out, host)


def name_is_empty(made: Any) -> bool:
    return getattr(made, "__name__", "") in ("empty", "empty_strided")


def _tensor_methods() -> dict[str, Any]:
    return {
        "to": api(copies.to), "cuda": api(copies.cuda), "pin_memory": api(copies.pin_memory),
        "is_pinned": api(copies.is_pinned),
    }  # fmt: skip


@contextlib.contextmanager
def emulated(devices: int = 2, capacity: int = 80 << 30) -> Iterator[Emulator]:
    """torch with ``devices`` emulated GPUs of ``capacity`` bytes each; yields the emulator (its counters, its
    devices, what to inject)."""
    if getattr(torch, "_repogen_emulated", False):
        raise RuntimeError("the emulated GPU is installed already")
    GPU.reset(devices, capacity)
    saved: list[tuple[Any, str, Any]] = []

    def replace(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, vars(owner).get(name, _ABSENT)))
        setattr(owner, name, value)

    ORIGINAL.update({name: getattr(torch, name) for name in _FACTORIES})
    ORIGINAL.update(to=torch._C.TensorBase.to, to_dlpack=torch.utils.dlpack.to_dlpack,
                    from_dlpack=torch.utils.dlpack.from_dlpack)  # fmt: skip
    for name in _FACTORIES:
        replace(torch, name, _factory(name))
    for name, value in _tensor_methods().items():
        replace(torch.Tensor, name, value)
    for name, value in _cuda_namespace().items():
        replace(torch.cuda, name, value)
    replace(torch._C, "_host_emptyCache", _host_empty_cache)
    to_dlpack = api(lambda value: copies.capsule_of(value) if place_of(value) != HOST else ORIGINAL["to_dlpack"](
        value))  # fmt: skip
    from_dlpack = api(copies.from_dlpack)
    replace(torch.utils.dlpack, "to_dlpack", to_dlpack)
    replace(torch.utils.dlpack, "from_dlpack", from_dlpack)
    replace(torch, "from_dlpack", from_dlpack)
    swap = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)  # nn.Module.to("cuda") keeps our tensors
    from ...local import backend_shim
    from .backend import EmulatedCuda

    replace(backend_shim, "GPU_RUNTIME", EmulatedCuda())
    backend_shim.COUNTS.clear()
    torch._repogen_emulated = True  # type: ignore[attr-defined]
    try:
        yield GPU
    finally:
        GPU.synchronize()
        torch.__future__.set_swap_module_params_on_conversion(swap)
        for owner, name, value in reversed(saved):
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
        torch._repogen_emulated = False  # type: ignore[attr-defined]
        _forget_frameworks()


_ABSENT = object()


def _forget_frameworks() -> None:
    """The runtime's cache of frameworks by type holds our class: let it find them again."""
    frameworks = sys.modules.get("repogen.runtime.frameworks")
    if frameworks is not None:
        frameworks._BY_TYPE.clear()
