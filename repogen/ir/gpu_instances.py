"""Where the instances of callables made on a GPU run: default instance groups, and the build's note of each.

PyTriton's ``multi_instance_resnet50_pytorch`` (and the binding example in its docs) makes the model before
``bind`` and moves it to the GPU there: ``model.half().to(device)``, one callable per device,
``devices=["cuda", "cpu"]``. PyTriton then runs each callable in its one process, where its tensors are.
In a static repository each instance unpickles the payload, and the runtime rebuilds each CUDA tensor on
that instance's device (``repogen/runtime/rebuilt_tensors.py``). So the instances must be where the tensors were
meant to be: without ``instance_groups``, a callable holding CUDA tensors gets a ``KIND_GPU`` instance on the
GPU the build made them on (``gpus=[<index>]``, so that a device its code names, ``"cuda:0"``, is the
instance's own), one that holds none a ``KIND_CPU`` one, one group per callable in the callables' order (the
runtime's ``instance_index`` then maps instance ``i`` to callable ``i`` exactly). Given ``instance_groups`` are
kept; a callable whose instances are all ``KIND_CPU`` loads its tensors onto the CPU, and the build says so.

Which callables hold CUDA tensors is found by walking what pickling takes (``repogen/pickling/cuda_scan.py``);
the IR is handed that scan (``lower(..., cuda_scan=...)``) and decides from its :class:`Held` findings alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .spec import InstanceGroupSpec, MadeOnGpu


@dataclasses.dataclass(frozen=True)
class Held:
    """Where one callable holds CUDA tensors: the chain to the first found, and every GPU index found."""

    at: str
    devices: tuple[int, ...]
    names: tuple[tuple[str, int], ...] = ()
    """(chain, index) of the first GPU it names by index (``"cuda:0"``, ``torch.device("cuda", 0)``), which the
    server does not move: on an instance on another GPU its inputs and its weights would be apart."""


CudaScan = Callable[[Sequence[Sequence[Any]]], Sequence[Held | None]]
"""Per callable position of a model (``infer_func=[f, g]``), what it holds on CUDA across the model's versions (each
version's callables, in order): ``repogen.pickling.cuda_scan.cuda_callables``."""


def default_groups(name: str, held: Sequence[Held | None]) -> tuple[InstanceGroupSpec, ...] | None:
    """Without ``instance_groups``: where callables hold CUDA tensors, one group per callable in their order, a
    ``KIND_GPU`` instance on the GPU the build made its tensors on, a ``KIND_CPU`` one for the others (None: no
    callable holds any, the usual default stands)."""
    if not any(held):
        return None
    return tuple(
        InstanceGroupSpec(name=f"{name}_{index}", kind="KIND_GPU", count=1, gpus=(found.devices[0],))
        if found is not None
        else InstanceGroupSpec(name=f"{name}_{index}", kind="KIND_CPU", count=1, gpus=())
        for index, found in enumerate(held)
    )


def instances_of(groups: Sequence[InstanceGroupSpec], index: int, callables: int) -> list[tuple[str, int | None]]:
    """(kind, GPU or None) of the instances that run callable ``index``: the runtime's ``instance_index`` modulo the
    number of callables (a ``KIND_GPU`` group without ``gpus`` makes one on every GPU: None)."""
    found = []
    position = 0
    for group in groups:
        for _ in range(group.count):
            for gpu in group.gpus or (None,):
                if position % callables == index:
                    found.append((group.kind, gpu if group.kind == "KIND_GPU" else None))
                position += 1
    return found


def made_on_gpu(
    held: Sequence[Held | None], groups: Sequence[InstanceGroupSpec], defaulted: bool
) -> tuple[MadeOnGpu, ...]:
    """What the build decided for each callable holding CUDA tensors (and, where it chose the groups, the others)."""
    if not any(held):
        return ()
    notes = []
    for index, found in enumerate(held):
        label = "infer_func" if len(held) == 1 else f"infer_func[{index}]"
        runs = instances_of(groups, index, len(held))
        if found is None:
            if defaulted:
                notes.append(MadeOnGpu(label, "", (), "holds no CUDA tensors: one KIND_CPU instance"))
            continue
        runs_text = _where(runs, found.devices, defaulted) + _apart(runs, found.names)
        notes.append(MadeOnGpu(label, found.at, found.devices, runs_text))
    return tuple(notes)


def _apart(runs: Sequence[tuple[str, int | None]], names: Sequence[tuple[str, int]]) -> str:
    """A warning where the callable names a GPU by index and one of its KIND_GPU instances may be on another."""
    if not names:
        return ""
    chain, index = names[0]
    if all(gpu == index for kind, gpu in runs if kind == "KIND_GPU"):
        return ""
    return (
        f". It names cuda:{index} (at {chain}), which stays GPU {index} in the server: on an instance on another GPU "
        'its inputs would go there and its tensors would not. Name "cuda" instead (the instance\'s own GPU in the '
        "server), or give it gpus=[" + str(index) + "]"
    )


def _where(runs: Sequence[tuple[str, int | None]], devices: Sequence[int], defaulted: bool) -> str:
    kinds = {kind for kind, _ in runs}
    several = (
        f"; it held tensors on {len(devices)} GPUs, and all load onto the instance's one device"
        if len(devices) > 1
        else ""
    )
    if kinds == {"KIND_CPU"}:
        return (
            "its instances are KIND_CPU (instance_groups), so its tensors load onto the CPU; give it a KIND_GPU group "
            "to run it on a GPU" + several
        )
    gpus = sorted({gpu for kind, gpu in runs if kind == "KIND_GPU" and gpu is not None})
    on = (
        f"on GPU {', '.join(map(str, gpus))}"
        if gpus and all(g is not None for k, g in runs if k == "KIND_GPU")
        else "on every GPU"
    )
    if defaulted:
        return (
            f"one KIND_GPU instance, {on} where the build made them (gpus={gpus}); its tensors load onto the "
            'instance\'s GPU (instance_groups=[InstanceGroup(kind="KIND_GPU")] puts one on every GPU)' + several
        )
    if kinds == {"KIND_GPU"}:
        return f"KIND_GPU instances {on} (instance_groups); its tensors load onto each instance's GPU" + several
    return (
        f"KIND_GPU instances {on} and KIND_CPU ones (instance_groups); its tensors load onto each instance's device: "
        "its GPU, or the CPU" + several
    )
