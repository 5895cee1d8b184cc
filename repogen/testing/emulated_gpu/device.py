"""The emulated GPUs' clocks: streams whose work lands only when a wait covers it, events, memory and counters.

Work given to a device (a kernel, an asynchronous copy) is queued on a stream and runs when something waits for it:
the stream's ``synchronize``, an event recorded after it and waited on (by the host or by another stream, which
then runs it first when its own work lands), a synchronize of the device, or a blocking copy. Until then what it
writes holds poison (every byte 0xFF: NaN for floats, -1 for integers) and what it reads is read when it lands,
so host memory changed before a copy that reads it has landed corrupts that copy. This is the latest a real GPU
may run the work, which is what makes an ordering mistake show as a wrong answer instead of a race that passes.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from _thread import get_ident
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, TypeVar

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
        self._allocated = 0
        self.peak = 0
        self._cached = 0
        self.fail_allocations = 0  # the next N allocations run out of memory, whatever is free

    @property
    def allocated(self) -> int:
        """Bytes in use (what the tensors alive hold)."""
        GPU.collect()
        return self._allocated

    @allocated.setter
    def allocated(self, nbytes: int) -> None:
        self._allocated = nbytes

    @property
    def cached(self) -> int:
        """Freed bytes torch's allocator keeps until ``empty_cache()``."""
        GPU.collect()
        return self._cached

    @cached.setter
    def cached(self, nbytes: int) -> None:
        self._cached = nbytes

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
            self._cached = 0  # torch frees its cached blocks and tries again before giving up
        if self.fail_allocations or self._allocated + nbytes > self.capacity:
            self.fail_allocations = max(0, self.fail_allocations - 1)
            raise torch.OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {nbytes / GiB:.2f} GiB. GPU {self.index} has a total capacity "
                f"of {self.capacity / GiB:.2f} GiB of which {(self.capacity - self.allocated) / GiB:.2f} GiB is free."
            )
        self._allocated += nbytes
        self._cached = max(0, self._cached - nbytes)
        self.peak = max(self.peak, self._allocated)

    def free(self, nbytes: int) -> None:
        self._allocated -= nbytes
        self._cached += nbytes


_Work = TypeVar("_Work", bound=Callable[..., Any])


def api(work: _Work) -> _Work:
    """``work`` as one of torch's functions the emulator answers: a tensor-API call (module docstring of tensor.py),
    run through the emulator's gate."""

    @functools.wraps(work)
    def call(*args: Any, **kwargs: Any) -> Any:
        return GPU.outermost("tensor API", work, *args, **kwargs)

    call._emulated_api = work  # type: ignore[attr-defined]  # what bench/gpu_work.py wraps in its own gate instead
    return call  # type: ignore[return-value]


class Event:
    """``torch.cuda.Event``: a mark on a stream; waiting on it lands that stream's work up to the mark."""

    @api
    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.stream: Stream | None = None
        self.mark = 0

    @api
    def record(self, stream: Any = None) -> None:
        target = current_stream() if stream is None else stream._emulated
        self.stream, self.mark = target, target.queued
        GPU.count("record")

    @api
    def synchronize(self) -> None:
        GPU.count("sync")
        if self.stream is not None:
            self.stream.land(self.mark)

    @api
    def wait(self, stream: Any = None) -> None:
        (current_stream() if stream is None else stream._emulated).enqueue(self.synchronize_quietly, "wait event")

    def synchronize_quietly(self) -> None:
        if self.stream is not None:
            self.stream.land(self.mark)

    @api
    def query(self) -> bool:
        return self.stream is None or self.stream.landed >= self.mark


class Emulator:
    """The emulated machine: its devices, each thread's current device and streams, and what was asked of them."""

    def __init__(self) -> None:
        self.devices: list[Device] = []
        self.counts: Counter[str] = Counter()
        self._pinned = 0  # bytes of page-locked host memory in use
        self.pinned_peak = 0
        self._pinned_cached = 0
        self.pinned_capacity = 64 * GiB
        self.fail_pinned = 0
        self.local = threading.local()
        self.busy: set[int] = set()
        """The threads inside one of the emulator's calls (:meth:`outermost`): what they call is the emulator's own."""
        self.log: list[str] = []
        self.generation = 0  # a reset's number: memory freed after one is not the new devices'
        self.live: dict[weakref.ref[Any], tuple[int, Callable[[int], None], int]] = {}
        self.dead: list[weakref.ref[Any]] = []
        """Memory given back: the references of storages that died, freed at the next look at the memory. A storage
        dies where the code under test drops its last tensor; the list's ``append`` (C) is all that runs there."""
        self.gate: Callable[..., Any] | None = None
        """What the outermost emulated call runs through, ``gate(work, *args, **kwargs)``, while bench/gpu_work.py
        counts instructions: callgrind counts nothing inside (the emulated device's own work). A call that torch's C++
        hands to ``__torch_function__`` is left out by callgrind itself, at torch's dispatch (:meth:`covered`)."""

    def reset(self, devices: int = 2, capacity: int = 80 * GiB) -> None:
        self.devices = [Device(i, capacity) for i in range(devices)]
        self.counts.clear()
        self.live.clear()
        self.dead.clear()
        self._pinned = self.pinned_peak = self._pinned_cached = self.fail_pinned = 0
        self.local = threading.local()
        self.busy.clear()
        self.log.clear()
        self.generation += 1

    def api(self, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``work(*args, **kwargs)``, one of torch's functions the emulator answers for the code under test: counted
        as a tensor-API call and run through the gate where it is the outermost (the emulator's own calls inside it
        are neither)."""
        return self.outermost("tensor API", work, *args, **kwargs)

    def inside(self) -> bool:
        """Whether this thread is inside one of the emulator's calls (its own work, not the code under test's)."""
        return get_ident() in self.busy

    def outermost(self, what: str, work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``work(*args, **kwargs)`` counted as a ``what`` and run through the gate where no other such call is under
        way in this thread (bench/gpu_work.py counts python_backend's calls so, as ``pb_utils``); the counting too
        runs inside."""
        thread = get_ident()
        busy = self.busy
        if thread in busy:
            return work(*args, **kwargs)
        busy.add(thread)
        try:
            if self.gate is None:
                return self._counted(what, work, args, kwargs)
            return self.gate(self._counted, what, work, args, kwargs)
        finally:
            busy.discard(thread)

    def _counted(self, what: str, work: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
        self.tally(what)
        return work(*args, **kwargs)

    def tally(self, what: str = "tensor API") -> None:
        """One more ``what`` (the memory of what died meanwhile freed first)."""
        self.collect()
        self.counts[what] += 1
        if self.gate is not None:
            self.counts["gated"] += 1

    def covered(self, kind: str, work: Callable[..., Any], *args: Any) -> Any:
        """As :meth:`api`, for a call torch's C++ handed to ``__torch_function__`` while instructions are counted:
        callgrind leaves it out at torch's dispatch (``--toggle-collect``), so it takes no gate. Nested in another
        call, callgrind counts it: ``leaked`` says how many (bench/gpu_work.py asks for none). ``kind`` (``C++
        getter``, ``C++ method``) is what bench/gpu_work.py subtracts torch's way there by."""
        thread = get_ident()
        busy = self.busy
        if thread in busy:
            self.counts["leaked"] += 1
            return work(*args)
        busy.add(thread)
        try:
            self.collect()
            self.counts["tensor API"] += 1
            self.counts[f"through torch's {kind}"] += 1
            return work(*args)
        finally:
            busy.discard(thread)

    def run(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args)``: the emulated device's own work (python_backend's side of it, say), through the gate when
        it is the outermost, and not counted as the model's tensor-API call."""
        thread = get_ident()
        busy = self.busy
        if thread in busy:
            return work(*args)
        busy.add(thread)
        try:
            return work(*args) if self.gate is None else self.gate(work, *args)
        finally:
            busy.discard(thread)

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

    @property
    def pinned(self) -> int:
        """Bytes of page-locked host memory in use."""
        self.collect()
        return self._pinned

    @property
    def pinned_cached(self) -> int:
        self.collect()
        return self._pinned_cached

    @pinned_cached.setter
    def pinned_cached(self, nbytes: int) -> None:
        self._pinned_cached = nbytes

    def pin(self, nbytes: int) -> None:
        if self.fail_pinned or self.pinned + nbytes > self.pinned_capacity:
            self.fail_pinned = max(0, self.fail_pinned - 1)
            raise RuntimeError("CUDA error: out of memory")  # cudaHostAlloc's failure, as torch raises it
        self._pinned += nbytes
        self.pinned_peak = max(self.pinned_peak, self._pinned)
        self.count("pinned allocations")

    def unpin(self, nbytes: int) -> None:
        self._pinned -= nbytes
        self._pinned_cached += nbytes

    def track(self, storage: Any, free: Callable[[int], None], nbytes: int) -> None:
        """``free(nbytes)`` once ``storage`` (the memory of a tensor and its views) is gone."""
        self.live[weakref.ref(storage, self.dead.append)] = (self.generation, free, nbytes)

    def collect(self) -> None:
        """The memory of the storages that died since the last look, freed."""
        dead = self.dead
        while dead:
            generation, free, nbytes = self.live.pop(dead.pop())
            if generation == self.generation:
                free(nbytes)

    def pending(self) -> int:
        return sum(len(stream.pending) for device in self.devices for stream in device.streams)


GPU = Emulator()


def current_stream(index: int | None = None) -> Stream:
    return GPU.current(index)
