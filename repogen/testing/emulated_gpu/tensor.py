"""Tensors on an emulated GPU: real torch CPU tensors (a ``torch.Tensor`` subclass) that say they live on ``cuda:N``.

Every operation runs in torch itself on the tensor's real memory, so whatever torch enforces holds (the truth value
of a tensor of many elements, views and their ``_base``, strides, dtype views, ``requires_grad``, DLPack). Only the
device is posed, and with it the timing (device.py): an operation that makes a new tensor on a device allocates it
at once, filled with poison, and computes it when the stream it was queued on lands; a view is made at once (it
touches no data); an in-place operation is queued; an operation whose result the host reads (``item``, ``bool``,
``tolist``, a shape that depends on the values) waits for the current stream first, as CUDA's do. Tensors of two
devices, or of a device and the host, in one operation fail as torch fails them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.overrides
from torch._C import DisableTorchFunctionSubclass
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from .device import GPU, Stream

HOST, PINNED = -2, -1  # a tensor's place: pageable host memory, page-locked host memory, or a device's index
ORIGINAL: dict[str, Any] = {}  # torch's own functions, saved by install.py before it replaces them
# torch's Python-level methods (torch/_tensor.py: split, norm, __len__, __dlpack__) reach __torch_function__ from here
_PYTHON_HANDLER = torch.overrides.handle_torch_function.__code__

# Tensor methods whose trailing underscore changes metadata, not data: run at once
_METADATA_INPLACE = frozenset({
    "requires_grad_", "detach_", "retain_grad", "share_memory_", "resize_", "as_strided_", "squeeze_", "unsqueeze_",
    "t_", "transpose_", "swapdims_", "swapaxes_", "set_", "_fix_weakref", "register_hook", "rename_", "refine_names",
})  # fmt: skip
_IN_PLACE_DUNDER = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__",
})  # fmt: skip


class EmulatedTensor(torch.Tensor):
    """A torch tensor whose memory is a device's (``_place`` >= 0) or page-locked host memory (``PINNED``)."""

    _place: int

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if GPU.gate is not None:  # counted by callgrind (bench/gpu_work.py): what torch's C++ hands over it leaves out
            if sys._getframe(1).f_code is not _PYTHON_HANDLER:
                getter = getattr(func, "__name__", "") == "__get__"
                return GPU.covered("C++ getter" if getter else "C++ method", dispatch, func, args, kwargs or {})
            if not GPU.inside():
                GPU.counts["through torch's Python handler"] += 1
        return GPU.outermost("tensor API", dispatch, func, args, kwargs or {})


def place_of(value: Any) -> int:
    return getattr(value, "_place", HOST) if isinstance(value, torch.Tensor) else HOST


def placed(tensor: Any, place: int) -> Any:
    """``tensor`` (a plain one, or ours) as an emulated tensor at ``place``, sharing its memory; a view stays a view
    of its base (``as_subclass``), anything else becomes one of its own (``_make_subclass``)."""
    if type(tensor) is not EmulatedTensor:
        tensor = tensor.as_subclass(EmulatedTensor) if tensor._base is not None else _subclass(tensor)
    tensor._place = place
    return tensor


def _subclass(tensor: torch.Tensor) -> torch.Tensor:
    return torch.Tensor._make_subclass(EmulatedTensor, tensor, tensor.requires_grad)


def real(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func`` as torch runs it on the CPU, nothing emulated in the way."""
    with DisableTorchFunctionSubclass():
        return func(*args, **kwargs)


def poison(tensor: torch.Tensor) -> None:
    """Every element of ``tensor`` (a view's only) made what memory no one wrote reads: all bits set."""
    with torch.no_grad(), DisableTorchFunctionSubclass():
        value: Any = float("nan") if tensor.is_floating_point() or tensor.is_complex() else -1
        if tensor.dtype == torch.bool:
            value = True
        elif tensor.dtype == torch.uint8:
            value = 0xFF
        tensor.fill_(value)


def allocate(place: int, size: Any, stride: Any, dtype: torch.dtype, requires_grad: bool = False) -> EmulatedTensor:
    """New memory at ``place`` (a device's, accounted, or page-locked host memory), poisoned."""
    nbytes = _nbytes(size, stride, dtype)
    if place >= 0:
        GPU.device(place).allocate(nbytes)
    elif place == PINNED:
        GPU.pin(nbytes)
    fresh = ORIGINAL["empty_strided"](tuple(size), tuple(stride), dtype=dtype)
    poison(fresh)
    made = placed(fresh, place)
    if requires_grad:
        made.requires_grad_(True)
    _free_later(made, place, nbytes)
    return made


def _nbytes(size: Any, stride: Any, dtype: torch.dtype) -> int:
    if 0 in tuple(size):
        return 0
    return (1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True))) * dtype.itemsize


def _free_later(tensor: torch.Tensor, place: int, nbytes: int) -> None:
    storage = real(torch.Tensor.untyped_storage, tensor)  # freed with the last tensor over it (not a tensor's weakref,
    if place >= 0:  # which torch.utils.swap_tensors refuses)
        GPU.track(storage, GPU.device(place).free, nbytes)
    elif place == PINNED:
        GPU.track(storage, GPU.unpin, nbytes)


def stream_of(place: int) -> Stream:
    return GPU.current(place)


# -- dispatch ---------------------------------------------------------------------------------------------------------


def dispatch(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    special = SPECIAL.get(func)
    if special is not None:
        return special(*args, **kwargs)
    if func in METADATA:
        return real(func, *args, **kwargs)
    return generic(func, args, kwargs)


def generic(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Any op on the device: a view at once, in-place work queued, a new tensor allocated (poison) and queued."""
    flat, _ = tree_flatten((args, kwargs))
    place = _place_of_op([v for v in flat if isinstance(v, torch.Tensor)])
    if place < 0:
        return _wrap(real(func, *args, **kwargs), flat, place)
    name = getattr(func, "__name__", "")
    if name in _METADATA_INPLACE:
        return _wrap(real(func, *args, **kwargs), flat, place)
    if "out" in kwargs or name in _IN_PLACE_DUNDER or (name.endswith("_") and not name.endswith("__")):
        stream_of(place).enqueue(_landing(func, args, kwargs), name)
        GPU.count("kernels")
        return kwargs.get("out", args[0] if name != "__setitem__" else None)
    meta_args, meta_kwargs = tree_map(_meta, (args, kwargs))
    try:
        meta = real(func, *meta_args, **meta_kwargs)
    except Exception:  # no meta kernel, or the values decide the result: the host waits for them, then it runs
        stream_of(place).land()
        GPU.count("syncs by reading")
        return _wrap(real(func, *args, **kwargs), flat, place)
    outputs, spec = tree_flatten(meta)
    made = [o for o in outputs if isinstance(o, torch.Tensor)]
    inputs = [m for m in tree_flatten((meta_args, meta_kwargs))[0] if isinstance(m, torch.Tensor)]
    if not made or any(_IS_ALIAS_OF(m, i) for m in made for i in inputs):
        return _wrap(real(func, *args, **kwargs), flat, place)  # metadata, or a view: nothing to compute
    fresh = [
        allocate(place, m.size(), m.stride(), m.dtype, m.requires_grad) if isinstance(m, torch.Tensor) else m
        for m in outputs
    ]
    stream_of(place).enqueue(_computing(func, args, kwargs, fresh), name)
    GPU.count("kernels")
    return tree_unflatten(fresh, spec)


def _meta(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    with DisableTorchFunctionSubclass():
        made = ORIGINAL["empty_strided"](value.size(), value.stride(), dtype=value.dtype, device="meta")
        return made.requires_grad_(True) if value.requires_grad else made


def _landing(func: Any, args: Any, kwargs: dict[str, Any]) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            real(func, *args, **kwargs)

    return run


def _computing(func: Any, args: Any, kwargs: dict[str, Any], fresh: list[Any]) -> Callable[[], None]:
    def run() -> None:
        with torch.no_grad():
            result, _ = tree_flatten(real(func, *args, **kwargs))
            for into, value in zip(fresh, result, strict=True):
                if isinstance(into, torch.Tensor):
                    real(torch.Tensor.copy_, into, value)

    return run


def _place_of_op(tensors: list[torch.Tensor]) -> int:
    """Where an op runs: the one device its tensors are on, else host memory; two devices fail as torch fails."""
    devices = {place_of(t) for t in tensors if place_of(t) >= 0}
    if not devices:
        return PINNED if any(place_of(t) == PINNED for t in tensors) else HOST
    if len(devices) > 1:
        a, b = sorted(devices)[:2]
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, cuda:{a} and cuda:{b}!"
        )
    (device,) = devices
    if any(place_of(t) < 0 and t.dim() > 0 for t in tensors):
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, cuda:{device} and cpu!"
        )
    return device


def _wrap(result: Any, flat: list[Any], place: int) -> Any:
    """Tensors an op returned, placed: on the op's device, or page-locked where they are views of such memory."""
    if place == HOST:
        return result
    with DisableTorchFunctionSubclass():  # the emulator's own look at them: no tensor-API calls of the model's
        return _placed_all(result, flat, place)


def _placed_all(result: Any, flat: list[Any], place: int) -> Any:
    pinned = {t.untyped_storage().data_ptr() for t in flat if isinstance(t, torch.Tensor) and place_of(t) == PINNED}

    def one(value: Any) -> Any:
        if not isinstance(value, torch.Tensor) or value.device.type == "meta":
            return value
        if place >= 0:
            return value if place_of(value) == place else placed(value, place)
        if value.untyped_storage().data_ptr() in pinned:
            return value if place_of(value) == PINNED else placed(value, PINNED)
        return value.as_subclass(torch.Tensor) if type(value) is EmulatedTensor else value

    return tree_map(one, result)


SPECIAL: dict[Any, Callable[..., Any]] = {}
_IS_ALIAS_OF: Any = getattr(torch._C, "_is_alias_of")  # noqa: B009  (private, untyped)
T: Any = torch.Tensor
METADATA = frozenset({
    T.shape.__get__, T.dtype.__get__, T.size, T.dim, T.stride, T.numel, T.element_size, T.is_contiguous, T.data_ptr,
    T.requires_grad.__get__, T.ndim.__get__, T.storage_offset, T.__len__, T.layout.__get__, T.is_floating_point,
    T.is_complex, T.nbytes.__get__, T.itemsize.__get__, T.grad_fn.__get__, T.is_leaf.__get__,
    T.is_sparse.__get__, T.is_quantized.__get__, T.is_meta.__get__, T.is_conj, T.is_neg, T.__hash__,
    T.untyped_storage, T.is_nested.__get__, torch._has_compatible_shallow_copy_type,
})  # fmt: skip
