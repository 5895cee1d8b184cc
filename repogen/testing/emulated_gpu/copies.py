"""Copies between host memory and the emulated GPUs, and what else reads or exports a device's memory, timed as
CUDA times them (torch's ``copy_``/``to`` over ``cudaMemcpyAsync``):

* host to device: queued on the device's current stream. From page-locked memory with ``non_blocking=True`` the
  source is read when the copy lands; from pageable memory it is read at once (the driver stages it). Without
  ``non_blocking`` the host waits for the stream.
* device to host: into page-locked memory with ``non_blocking=True``, queued (the destination holds poison until
  it lands; torch's ``to("cpu", non_blocking=True)`` makes such memory); anything else waits for the stream first.
* device to another device: queued on the destination's stream after what the source's stream had queued.
* ``item``, ``tolist``, ``bool`` and the like wait for the current stream; ``numpy()`` of device memory fails.
* ``__dlpack__(stream=...)`` as torch's: the consumer's stream waits for the current one; the capsule says kDLCUDA.
"""

from __future__ import annotations

from typing import Any

import torch

from ...local import dlpack
from .device import GPU, Event
from .tensor import HOST, ORIGINAL, PINNED, SPECIAL, allocate, generic, place_of, placed, poison, real, stream_of

Tensor: Any = torch.Tensor


def target_place(device: Any) -> int:
    """A torch device (or its name) as a place: ``cuda`` is the thread's current device."""
    device = torch.device(device)
    if device.type == "cpu":
        return HOST
    if device.type != "cuda":
        raise RuntimeError(f"the emulated GPU has no {device.type} device")
    index = GPU.current_device() if device.index is None else device.index
    GPU.device(index)
    return index


def _copy(into: Tensor, source: Tensor, non_blocking: bool) -> None:
    """``into.copy_(source)`` across places, timed as CUDA times it (module docstring)."""
    to, of = place_of(into), place_of(source)
    if to < 0 and of < 0:
        real(Tensor.copy_, into, source)
        return
    if to >= 0 and of < 0:
        asynchronous = non_blocking and of == PINNED
        read = source if asynchronous else real(Tensor.clone, source)  # pageable memory is read at once
        GPU.count("h2d async" if asynchronous else "h2d blocking")
        stream_of(to).enqueue(lambda: real(Tensor.copy_, into, read), "h2d")
        if not non_blocking:
            stream_of(to).land()
        return
    if to < 0:
        stream = stream_of(of)
        if non_blocking and to == PINNED:
            GPU.count("d2h async")
            poison(into)
            stream.enqueue(lambda: real(Tensor.copy_, into, source), "d2h")
            return
        GPU.count("d2h blocking")
        stream.land()
        real(Tensor.copy_, into, source)
        return
    if to == of:
        GPU.count("d2d")
        stream_of(to).enqueue(lambda: real(Tensor.copy_, into, source), "d2d")
        return
    GPU.count("d2d peer")
    before = stream_of(of)
    mark = before.queued

    def peer() -> None:
        before.land(mark)
        real(Tensor.copy_, into, source)

    stream_of(to).enqueue(peer, "d2d peer")


def copy_(into: Tensor, source: Any, non_blocking: bool = False) -> Tensor:
    if not isinstance(source, torch.Tensor) or (place_of(into) == place_of(source) and place_of(into) >= 0):
        if place_of(into) >= 0:
            stream_of(place_of(into)).enqueue(lambda: real(Tensor.copy_, into, source), "copy_")
            GPU.count("kernels")
            return into
        return real(Tensor.copy_, into, source)  # type: ignore[no-any-return]
    _copy(into, source, non_blocking)
    return into


def _moved(value: Tensor, to: int, dtype: torch.dtype | None, non_blocking: bool) -> Tensor:
    """``value`` copied to place ``to`` (and ``dtype``), in memory of its own there."""
    dtype = real(Tensor.dtype.__get__, value) if dtype is None else dtype
    like = real(torch.empty_like, value, dtype=dtype, device="cpu")
    into_place = PINNED if to == HOST and non_blocking and place_of(value) >= 0 else to
    made = allocate(into_place, like.size(), like.stride(), dtype) if into_place != HOST else like
    _copy(made, value, non_blocking)
    return made


def to(value: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
    here = place_of(value)
    there = here if device is None else target_place(device)
    if there == here or (here < 0 and there < 0):  # no device crossed
        if here >= 0:  # a cast on the device: an op like any other
            return generic(ORIGINAL["to"], (value, *args), kwargs)  # type: ignore[no-any-return]
        return ORIGINAL["to"](value.as_subclass(Tensor) if here == PINNED else value, *args, **kwargs)  # type: ignore[no-any-return]
    return _moved(value, there, dtype, non_blocking)


def cuda(value: Tensor, device: Any = None, non_blocking: bool = False, **_: Any) -> Tensor:
    index = GPU.current_device() if device is None else device if isinstance(device, int) else target_place(device)
    return to(value, f"cuda:{index}", non_blocking=non_blocking)


def cpu(value: Tensor, **_: Any) -> Tensor:
    return to(value, "cpu")


def numpy(value: Tensor, *, force: bool = False) -> Any:
    place = place_of(value)
    if place >= 0:
        raise TypeError(
            f"can't convert cuda:{place} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
            "memory first."
        )
    return real(Tensor.numpy, value, force=force)


def _reading(method: Any) -> Any:
    """A method whose answer the host reads from the tensor's memory: the current stream lands first."""

    def read(value: Tensor, *args: Any, **kwargs: Any) -> Any:
        place = place_of(value)
        if place >= 0:
            GPU.count("syncs by reading")
            stream_of(place).land()
        return real(method, value, *args, **kwargs)

    return read


def device_of(value: Tensor) -> torch.device:
    place = place_of(value)
    return torch.device("cuda", place) if place >= 0 else torch.device("cpu")


def dlpack_device(value: Tensor) -> tuple[int, int]:
    place = place_of(value)
    return (dlpack.KDL_CUDA, place) if place >= 0 else real(Tensor.__dlpack_device__, value)  # type: ignore[no-any-return]


def capsule_of(value: Tensor, counted: bool = True) -> Any:
    """A real DLPack capsule of ``value``'s memory, saying where that memory is (``counted``: the model's, not the
    backend's own)."""
    capsule = ORIGINAL["to_dlpack"](value.as_subclass(Tensor))
    place = place_of(value)
    if place >= 0:
        dlpack.set_device(capsule, dlpack.KDL_CUDA, place)
    if counted:
        GPU.count("capsules")
    return capsule


def dunder_dlpack(
    value: Tensor, *, stream: Any = -1, max_version: Any = None, dl_device: Any = None, copy: Any = None
) -> Any:
    """torch's ``Tensor.__dlpack__`` (torch/_tensor.py, 2.11-2.13): its checks, and its wait for a consumer's stream."""
    if real(Tensor.requires_grad.__get__, value):
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    place = place_of(value)
    if place >= 0:
        if place != GPU.current_device():
            raise BufferError(
                "Can't export tensors on a different CUDA device index. "
                f"Expected: {place}. Current device: {GPU.current_device()}."
            )
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        if stream != -1:
            consumer = GPU.current(None).device.legacy if stream in (None, 1) else GPU.by_handle(stream)
            current = GPU.current(None)
            if consumer is not current:
                event = Event()
                event.stream, event.mark = current, current.queued
                consumer.enqueue(event.synchronize_quietly, "wait event")
                GPU.count("dlpack stream waits")
    elif stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    return capsule_of(value)


def from_dlpack(source: Any) -> Tensor:
    """torch's ``from_dlpack``: an object's capsule asked on the current stream of its device, then taken."""
    if dlpack.is_capsule(source):
        kind, index = dlpack.device(source)
        if kind != dlpack.KDL_CUDA:
            return ORIGINAL["from_dlpack"](source)  # type: ignore[no-any-return]
        dlpack.set_device(source, dlpack.KDL_CPU, 0)
        return placed(ORIGINAL["from_dlpack"](source), index)
    kind, index = source.__dlpack_device__()
    if kind != dlpack.KDL_CUDA:
        return ORIGINAL["from_dlpack"](source)  # type: ignore[no-any-return]
    stream = GPU.current(index)
    return from_dlpack(source.__dlpack__(stream=1 if stream.handle == 0 else stream.handle))


def is_pinned(value: Tensor, *_: Any) -> bool:
    return place_of(value) == PINNED


def pin_memory(value: Tensor, *_: Any) -> Tensor:
    if place_of(value) >= 0:
        raise RuntimeError("cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned")
    made = allocate(PINNED, value.size(), value.stride(), value.dtype)
    real(Tensor.copy_, made, value)
    return made


def record_stream(value: Tensor, stream: Any) -> None:
    """The caching allocator's bookkeeping: nothing to emulate (memory here is freed when Python frees it)."""


SPECIAL.update({
    Tensor.copy_: copy_, Tensor.to: to, Tensor.cuda: cuda, Tensor.cpu: cpu, Tensor.numpy: numpy,
    Tensor.__dlpack__: dunder_dlpack, Tensor.__dlpack_device__: dlpack_device, Tensor.is_pinned: is_pinned,
    Tensor.pin_memory: pin_memory, Tensor.record_stream: record_stream, Tensor.device.__get__: device_of,
    Tensor.is_cuda.__get__: lambda value: place_of(value) >= 0,
    Tensor.get_device: lambda value: max(place_of(value), -1),
    **{method: _reading(method) for method in (
        Tensor.item, Tensor.tolist, Tensor.__bool__, Tensor.__float__, Tensor.__int__, Tensor.__index__,
        Tensor.__complex__, Tensor.__array__, Tensor.__repr__, Tensor.__format__, Tensor.nonzero, Tensor.equal,
        torch.equal, torch.allclose, Tensor.allclose, Tensor.masked_select, torch.masked_select, Tensor.unique,
        torch.unique, torch.nonzero, Tensor.is_nonzero,
    )},
})  # fmt: skip
