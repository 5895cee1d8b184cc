"""python_backend's side of GPU tensors, on the emulated devices: what repogen.local's stand-in of ``pb_utils`` asks
of CUDA (``backend_shim.GpuRuntime``), as r24.10's stub and parent do it (src/pb_stub.cc, pb_memory.cc, pb_tensor.cc):

* the stub's proxy stream, one per device, which ``Tensor.from_dlpack(name, tensor)`` hands to ``__dlpack__`` and
  then waits for (``cudaStreamSynchronize``);
* ``cudaMemcpy`` of an output to the host or into the CUDA pool after ``execute`` (``LoadGPUBuffers``): on the
  legacy default stream, so it follows what torch queued there and nothing a side stream still holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from . import copies
from .device import GPU, Stream
from .tensor import allocate, place_of, real


class EmulatedCuda:
    def __init__(self) -> None:
        self.proxies: dict[int, Stream] = {}

    def current_device(self) -> int:
        return GPU.current_device()

    @contextlib.contextmanager
    def on_device(self, index: int) -> Iterator[None]:
        """The stub's ``ScopedSetDevice``."""
        before = GPU.current_device()
        GPU.set_device(index)
        try:
            yield
        finally:
            GPU.set_device(before)

    def proxy_stream(self, index: int) -> int:
        if index not in self.proxies:
            self.proxies[index] = GPU.device(index).new_stream()
        return self.proxies[index].handle

    def stream_synchronize(self, handle: int) -> None:
        GPU.count("sync")
        GPU.by_handle(handle).land()

    def adopt(self, capsule: Any) -> Any:
        return GPU.run(copies.from_dlpack, capsule)

    def capsule(self, tensor: Any) -> Any:
        return GPU.run(copies.capsule_of, tensor, False)  # python_backend's, of an input

    def to_host(self, tensor: Any) -> np.ndarray:
        """``cudaMemcpy`` device to host: after the legacy default stream's work, blocking."""
        return GPU.run(self._to_host, tensor)  # type: ignore[no-any-return]

    @staticmethod
    def _to_host(tensor: Any) -> np.ndarray:
        GPU.device(place_of(tensor)).legacy.land()
        GPU.count("server d2h")
        return real(torch.Tensor.numpy, real(torch.Tensor.clone, tensor))  # type: ignore[no-any-return]

    def to_pool(self, tensor: Any) -> Any:
        """``cudaMemcpy`` device to device into the CUDA pool, then ``cudaStreamSynchronize(0)``."""
        return GPU.run(self._to_pool, tensor)

    @staticmethod
    def _to_pool(tensor: Any) -> Any:
        place = place_of(tensor)
        GPU.device(place).legacy.land()
        GPU.count("server d2d")
        pooled = allocate(place, tensor.size(), real(torch.Tensor.stride, tensor), tensor.dtype)
        real(torch.Tensor.copy_, pooled, tensor)
        return pooled

    def nbytes(self, tensor: Any) -> int:
        return int(real(torch.Tensor.numel, tensor)) * tensor.element_size()
