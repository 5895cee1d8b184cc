"""The emulated GPUs' clocks: streams whose work lands only when a wait covers it, events, memory and counters.

Work given to a device (a kernel, an asynchronous copy) is queued on a stream and runs when something waits for it:
the stream's ``synchronize``, an event recorded after it and waited on (by the host or by another stream, which
then runs it first when its own work lands), a synchronize of the device, or a blocking copy. Until then what it
writes holds poison (every byte 0xFF: NaN for floats, -1 for integers) and what it reads is read when it lands,
so host memory changed before a copy that reads it has landed corrupts that copy. This is the latest a real GPU
may run the work, which is what makes an ordering mistake show as a wrong answer instead of a race that passes.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

POISON = 0xFF
GiB = 1 << 30
_handles = itertools.count(0x7F00_0000_1000, 0x100)  # stream handles as CUDA's are: addresses, never 0, 1 or 2


class Stream:
    """A FIFO of the device's work; ``handle`` is what ``cuda_stream`` says (0: the legacy default stream)."""

    def __init__(self, device: Device, default: bool = False):
        self.device = device
        self.handle = 0 if default else next(_handles)
        self.pending: deque[tuple[int, Callable[[], None], str]] = deque()
        self.queued = 0  # work items ever queued
        self.landed = 0  # of those, how many have run

    def enqueue(self, work: Callable[[], None], what: str) -> None:
        self.queued += 1
        self.pending.append((self.queued, work, what))

    def land(self, upto: int | None = None) -> None:
        """Run the work queued here up to item ``upto`` (all of it by default), in order."""
        upto = self.queued if upto is None else upto
        while self.pending and self.pending[0][0] <= upto:
            _, work, _ = self.pending.popleft()
            self.landed += 1
            work()

    def __repr__(self) -> str:
        return f"<emulated stream {self.handle:#x} on cuda:{self.device.index}, {len(self.pending)} pending>"


class Device:
    """One emulated GPU: its streams, its memory as torch's caching allocator keeps it, and what may be injected."""

    def __init__(self, index: int, capacity: int):
        self.index = index
        self.capacity = capacity
        self.legacy = Stream(self, default=True)
        self.streams: list[Stream] = [self.legacy]
        self.allocated = 0
        self.peak = 0
        self.cached = 0  # freed blocks torch's allocator keeps until empty_cache()
        self.fail_allocations = 0  # the next N allocations run out of memory, whatever is free

    def new_stream(self) -> Stream:
        stream = Stream(self)
        self.streams.append(stream)
        return stream

    def synchronize(self) -> None:
        for stream in list(self.streams):
            stream.land()

    def allocate(self, nbytes: int) -> None:
        """``nbytes`` more in use, or torch's OutOfMemoryError (after giving back the cache, as torch retries)."""
        import torch

        if self.fail_allocations or self.allocated + nbytes > self.capacity:
            self.cached = 0  # torch frees its cached blocks and tries again before giving up
        if self.fail_allocations or self.allocated + nbytes > self.capacity:
            self.fail_allocations = max(0, self.fail_allocations - 1)
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {nbytes / GiB:.2f} GiB. GPU {self.index} has a total capacity "
                f"of {self.capacity / GiB:.2f} GiB of which {(self.capacity - self.allocated) / GiB:.2f} GiB is free."
            )
        self.allocated += nbytes
        self.cached = max(0, self.cached - nbytes)
        self.peak = max(self.peak, self.allocated)

    def free(self, nbytes: int) -> None:
        self.allocated -= nbytes
        self.cached += nbytes


class Event:
    """``torch.cuda.Event``: a mark on a stream; waiting on it lands that stream's work up to the mark."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.stream: Stream | None = None
        self.mark = 0

    def record(self, stream: Any = None) -> None:
        target = current_stream() if stream is None else stream._emulated
        self.stream, self.mark = target, target.queued
        GPU.count("record")

    def synchronize(self) -> None:
        GPU.count("sync")
        if self.stream is not None:
            self.stream.land(self.mark)

    def wait(self, stream: Any = None) -> None:
        (current_stream() if stream is None else stream._emulated).enqueue(self.synchronize_quietly, "wait event")

    def synchronize_quietly(self) -> None:
        if self.stream is not None:
            self.stream.land(self.mark)

    def query(self) -> bool:
        return self.stream is None or self.stream.landed >= self.mark


class Emulator:
    """The emulated machine: its devices, each thread's current device and streams, and what was asked of them."""

    def __init__(self) -> None:
        self.devices: list[Device] = []
        self.counts: Counter[str] = Counter()
        self.pinned = 0  # bytes of page-locked host memory in use
        self.pinned_peak = 0
        self.pinned_cached = 0
        self.pinned_capacity = 64 * GiB
        self.fail_pinned = 0
        self.local = threading.local()
        self.log: list[str] = []
        self.generation = 0  # a reset's number: memory freed after one is not the new devices'
        self.gate: Callable[..., Any] | None = None
        """What the outermost emulated call runs through (bench/gpu_work.py's callgrind count leaves it out)."""

    def reset(self, devices: int = 2, capacity: int = 80 * GiB) -> None:
        self.devices = [Device(i, capacity) for i in range(devices)]
        self.counts.clear()
        self.pinned = self.pinned_peak = self.pinned_cached = self.fail_pinned = 0
        self.local = threading.local()
        self.log.clear()
        self.generation += 1

    def run(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args)``: the emulated device's own work, through the gate when it is the outermost."""
        local = self.local
        depth = getattr(local, "depth", 0)
        if depth or self.gate is None:
            local.depth = depth + 1
            try:
                return work(*args)
            finally:
                local.depth = depth
        local.depth = 1
        try:
            return self.gate(work, *args)
        finally:
            local.depth = 0

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def device(self, index: int | None) -> Device:
        index = self.current_device() if index is None else index
        if not 0 <= index < len(self.devices):
            raise RuntimeError("CUDA error: invalid device ordinal")
        return self.devices[index]

    def current_device(self) -> int:
        return getattr(self.local, "device", 0)

    def set_device(self, index: int) -> None:
        self.device(index)
        self.local.device = index

    def current(self, index: int | None = None) -> Stream:
        device = self.device(index)
        chosen = getattr(self.local, "streams", {})
        return chosen.get(device.index, device.legacy)  # type: ignore[no-any-return]

    def use(self, stream: Stream) -> Stream:
        """``stream`` as its device's current stream in this thread; the one it replaces is returned."""
        chosen = self.local.__dict__.setdefault("streams", {})
        before = chosen.get(stream.device.index, stream.device.legacy)
        chosen[stream.device.index] = stream
        return before  # type: ignore[no-any-return]

    def by_handle(self, handle: int) -> Stream:
        for device in self.devices:
            for stream in device.streams:
                if stream.handle == handle:
                    return stream
        raise RuntimeError(f"no emulated CUDA stream has the handle {handle:#x}")

    def synchronize(self) -> None:
        for device in self.devices:
            device.synchronize()

    def pin(self, nbytes: int) -> None:
        if self.fail_pinned or self.pinned + nbytes > self.pinned_capacity:
            self.fail_pinned = max(0, self.fail_pinned - 1)
            raise RuntimeError("CUDA error: out of memory")  # cudaHostAlloc's failure, as torch raises it
        self.pinned += nbytes
        self.pinned_peak = max(self.pinned_peak, self.pinned)
        self.count("pinned allocations")

    def unpin(self, nbytes: int) -> None:
        self.pinned -= nbytes
        self.pinned_cached += nbytes

    def pending(self) -> int:
        return sum(len(stream.pending) for device in self.devices for stream in device.streams)


GPU = Emulator()


def current_stream(index: int | None = None) -> Stream:
    return GPU.current(index)
