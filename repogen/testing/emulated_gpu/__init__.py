"""An emulated GPU for tests on machines without one: fake the device, never the tensor (docs/gpu.md).

``with emulated() as gpu:`` makes torch's CPU build answer as a machine with two GPUs: tensors on ``cuda:0`` and
``cuda:1`` are real torch tensors in host memory that say where they live, and every copy, kernel and wait is
timed as CUDA times it, so that a missing or misplaced wait gives a wrong answer. ``gpu.counts`` says what was
asked of the devices; ``gpu.devices[i]`` holds a device's memory and what may be injected (out of memory).
"""

from __future__ import annotations

from .device import GPU, Device, Emulator, Stream
from .install import emulated
from .tensor import EmulatedTensor

__all__ = ["GPU", "Device", "EmulatedTensor", "Emulator", "Stream", "emulated"]
