"""Which bound callables hold CUDA tensors, where, and which tensors only one of them holds.

PyTriton's ``multi_instance_resnet50_pytorch`` makes its model before ``bind`` and moves it to the GPU there
(``model.half().to(device)``). Such a callable's instances must run where its tensors were meant to be
(``repogen/ir/gpu_instances.py`` decides where, from what this scan finds), and a tensor only one of a model's
per-instance callables holds need not take every instance's GPU memory (``owners``, for ``cuda_tensors.py``).

The walk follows what pickling takes (``pickled_parts.py``), bounded and cheap: an ``nn.Module`` answers for its
weights with ``parameters()`` and ``buffers()``, nothing is pickled, and a build whose process never imported
torch walks nothing.
"""

from __future__ import annotations

import collections
import itertools
import re
import sys
from collections.abc import Sequence
from typing import Any

from ..ir.gpu_instances import Held
from .pickled_parts import LEAVES, Parts, attributes, parts

LIMIT = 20_000  # objects walked from one model's callables
MAX_DEPTH = 32
_CUDA_NAME = re.compile(r"cuda:(\d+)")
_MODULE_STATE = ("_parameters", "_buffers", "_modules")  # an nn.Module's: parameters() and buffers() answer for them


def on_cuda(tensor: Any) -> bool:
    """Whether a torch tensor lives in CUDA memory (the seam tests on a machine without a GPU patch)."""
    return bool(tensor.is_cuda)


def cuda_index(tensor: Any) -> int:
    """The GPU a CUDA tensor lives on (``cuda`` without an index is the current device, 0 unless set)."""
    index = tensor.device.index
    return int(index) if index is not None else 0


def find_cuda(label: str, root: Any, ids: set[int] | None = None) -> Held | None:
    """The CUDA tensors ``root`` holds (None: none, or no torch in this process); ``ids`` gets each one's id, and
    -1 where the walk stopped short (a limit), so that it may have missed some."""
    torch = torch_types()
    if torch is None:
        return None
    tensor, module, device = torch
    devices: set[int] = set()
    first: str | None = None
    named: list[tuple[str, int]] = []
    pending = collections.deque([(label, root, 0)])
    seen: set[int] = set()
    covered: set[int] = set()  # modules whose weights an enclosing module's parameters() already answered for
    short = False

    def found(chain: str, value: Any) -> None:
        nonlocal first
        if on_cuda(value):
            devices.add(cuda_index(value))
            first = first or chain
            if ids is not None:
                ids.add(id(value))

    while pending and len(seen) < LIMIT:
        chain, obj, depth = pending.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        index = _named_gpu(obj, device)
        if index is not None and not named:
            named.append((chain, index))
        if isinstance(obj, tensor):
            found(chain, obj)
            continue
        if isinstance(obj, module) and id(obj) not in covered:
            covered.update(id(m) for m in obj.modules())
            for kind, listed in (("parameter", obj.named_parameters), ("buffer", obj.named_buffers)):
                for name, value in listed():
                    found(f"{chain} -> {kind} '{name}'", value)
        if depth >= MAX_DEPTH:
            short = True
            continue
        for name, part in _parts(obj, module):
            if isinstance(part, LEAVES):  # nothing inside; a string may name a GPU
                index = _named_gpu(part, device) if isinstance(part, str) and not named else None
                if index is not None:
                    named.append((f"{chain} -> {name}", index))
            elif len(pending) >= LIMIT:  # a list of a million items is not walked into, nor all queued
                short = True
                break
            elif id(part) not in seen:
                pending.append((f"{chain} -> {name}", part, depth + 1))
    if ids is not None and (short or pending):
        ids.add(-1)
    return Held(first, tuple(sorted(devices)), tuple(named)) if first is not None else None


def torch_types() -> tuple[Any, Any, Any] | None:
    """torch's ``Tensor``, ``nn.Module`` and ``device`` where this process imported torch (else no tensor exists)."""
    torch = sys.modules.get("torch")
    nn = getattr(torch, "nn", None)
    found = (getattr(torch, "Tensor", None), getattr(nn, "Module", None), getattr(torch, "device", None))
    return found if all(isinstance(t, type) for t in found) else None


def _named_gpu(obj: Any, device: Any) -> int | None:
    """The index of a GPU ``obj`` names (``"cuda:1"``, ``torch.device("cuda:1")``), else None."""
    if isinstance(obj, str):
        match = _CUDA_NAME.fullmatch(obj)
        return int(match.group(1)) if match else None
    if isinstance(obj, device) and obj.type == "cuda" and obj.index is not None:
        return int(obj.index)
    return None


def _parts(obj: Any, module: Any) -> Parts:
    """What pickling ``obj`` would take with it, as the walk needs it: no ``__reduce__`` asked, no module entered,
    and an ``nn.Module``'s submodules and other attributes (its weights were asked for apart)."""

    def module_parts(instance: Any) -> Parts | None:
        if not isinstance(instance, module):
            return None
        state = {k: v for k, v in vars(instance).items() if k not in _MODULE_STATE}
        submodules = vars(instance).get("_modules", {}).items()
        return itertools.chain(((f"submodule '{k}'", v) for k, v in submodules), attributes(instance, state))

    return parts(obj, reduce=False, modules=False, instance=module_parts)


def owners(callables: Sequence[tuple[str, Any]]) -> dict[int, tuple[int, int]]:
    """For a model whose callables are one per instance (``infer_func=[f, g]``): id of each CUDA tensor only one
    callable holds -> (its position, the number of callables). Each instance unpickles them all but serves one, so
    the others' tensors need not take its GPU's memory (``runtime/rebuilt_tensors.py``). Empty where a walk stopped
    short: a tensor it missed might be another callable's too."""
    held: list[set[int]] = []
    for label, root in callables:
        ids: set[int] = set()
        find_cuda(label, root, ids)
        if -1 in ids:
            return {}
        held.append(ids)
    counts = collections.Counter(key for ids in held for key in ids)
    return {key: (index, len(held)) for index, ids in enumerate(held) for key in ids if counts[key] == 1}


def cuda_callables(versions: Sequence[Sequence[Any]]) -> tuple[Held | None, ...]:
    """Per callable position (``infer_func=[f, g]``), what it holds on CUDA across the model's versions."""
    count = len(versions[0]) if versions else 0
    held: list[Held | None] = []
    for index in range(count):
        label = "infer_func" if count == 1 else f"infer_func[{index}]"
        found = [f for f in (find_cuda(label, funcs[index]) for funcs in versions) if f is not None]
        if not found:
            held.append(None)
            continue
        devices = tuple(sorted({d for f in found for d in f.devices}))
        names = next((f.names for f in found if f.names), ())
        held.append(Held(found[0].at, devices, names))
    return tuple(held)
