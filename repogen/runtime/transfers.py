"""How a batch's tensors cross between host memory and a GPU: one copy in, one copy per output out, one wait.

python_backend hands a model the inputs of HTTP and gRPC requests in host memory. A GPU output whose reader is a
network client makes the server call back into the stub after ``execute`` for its buffers and copy each one,
blocking, into pageable memory; ``pb_utils.Tensor.from_dlpack(name, tensor)`` waits on the producer's stream once
per tensor (DESIGN.md, "The GPU machine"). Triton's own PyTorch handler moves each request's inputs on their own
and sends each request's slice. Here a batch crosses once:

* in (:class:`Arrival`): every request's host inputs are written into page-locked memory the instance keeps and
  copied to its GPU in one asynchronous copy; each request's inputs are views of that copy, one input's rows after
  another's, so ``@batch`` joins them without copying again;
* out (:class:`Departure`), for readers over the network: each output's rows (one run of memory under ``@batch``)
  are copied into page-locked host memory without waiting, the batch waits once, and numpy views of it are sent,
  so the server has nothing left to fetch from the stub; for readers on a GPU (an ensemble step or a BLS caller
  that takes a framework's tensors, CUDA shared-memory clients: ``ModelConfig(output_memory="gpu")``), the batch
  waits once and each output leaves as a DLPack capsule, which python_backend neither synchronises nor copies.

Only a framework offering pinned memory and asynchronous copies takes these ways (``Framework.batch_transfers``:
torch); cupy and array-API libraries keep moving each tensor on its own.

A model that declared a framework's tensors reads each input through :func:`input_reader` (CPU instances too): it
ships with frameworks.py, as this module does, and never with a numpy model that cannot meet another framework.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any

import numpy as np

from .contract import BF16, GPU, STRING
from .contract.tritonserver_flags import CUDA_POOL_DEFAULT, POOL_FLAG
from .frameworks import Framework, framework_of

ALIGN = 256
"""Bytes: where each input's rows start in the staged buffer (CUDA's allocation alignment, so every view is)."""
"""tritonserver's CUDA memory pool per GPU (``--cuda-memory-pool-byte-size``), shared with the backend stubs since
python_backend r23.11: GPU tensors between the server and a stub pass through it; past it, a CUDA IPC handle per
buffer (the server logs "will use CUDA IPC")."""
_NUMERIC = frozenset("biufc")  # numpy kinds a framework's tensor holds: booleans and numbers, not BYTES
VIEWS_KEPT = 256  # a Staging's typed views (a batch size per entry, each output's): enough for max_batch_size 64


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def pool_bytes(server_argv: list[str] | None, device_id: int) -> int:
    """The CUDA memory pool tritonserver was started with on GPU ``device_id`` (its command line), else the default."""
    size = CUDA_POOL_DEFAULT
    argv = server_argv or []
    for index, arg in enumerate(argv):
        value = arg.partition("=")[2] if arg.startswith(POOL_FLAG + "=") else None
        if arg == POOL_FLAG and index + 1 < len(argv):
            value = argv[index + 1]
        gpu, _, count = (value or "").partition(":")
        if gpu.strip().isdigit() and int(gpu) == device_id and count.strip().isdigit():
            size = int(count)
    return size


class Staging:
    """Page-locked host memory an instance keeps for one direction, grown to the largest batch it has carried."""

    def __init__(self, framework: Any):
        self.framework = framework
        self.tensor: Any = None
        self.array: np.ndarray | None = None
        self.pending: Any = None
        """The marker of the last copy out of this memory, until a wait that covers it (a batch's) settles it."""
        self.views: dict[tuple[int, Any, tuple[int, ...]], tuple[Any, np.ndarray]] = {}
        """Typed views of this memory by (offset, dtype, shape), made once (runtime/gpu_batch.py's batches repeat)."""

    def take(self, nbytes: int) -> tuple[Any, np.ndarray]:
        """The memory, free to be written: the copy that last read it has finished."""
        if self.pending is not None:
            self.pending.synchronize()
            self.pending = None
        if self.array is None or self.array.nbytes < nbytes:
            have = 0 if self.array is None else self.array.nbytes
            self.tensor, self.array = self.framework.pinned(aligned(max(nbytes, 2 * have, 1 << 16)))
            self.views = {}
        assert self.array is not None
        return self.tensor, self.array

    def typed(self, offset: int, dtype: np.dtype | str, shape: tuple[int, ...]) -> tuple[Any, np.ndarray]:
        """Bytes ``offset``.. of the memory (taken already) as ``dtype`` (or its name) of ``shape``: the framework's
        tensor and a numpy array over the same bytes."""
        key = (offset, dtype, shape)
        found = self.views.get(key)
        if found is None:
            if len(self.views) >= VIEWS_KEPT:
                self.views.clear()
            assert self.array is not None
            dtype = np.dtype(dtype)
            nbytes = dtype.itemsize * prod(shape)
            array = self.array[offset : offset + nbytes].view(dtype).reshape(shape)
            found = self.views[key] = (self.framework.typed(self.tensor, offset, dtype, shape), array)
        return found


class Arrival:
    """Host inputs onto the instance's GPU: the batch's numeric numpy arrays in one asynchronous copy."""

    def __init__(self, framework: Any, device: str):
        self.framework = framework
        self.device = device
        self.staging = Staging(framework)

    def move(self, requests: Sequence[dict[str, Any]]) -> None:
        """Every numeric numpy array of ``requests`` replaced, in place, by its tensor on the device."""
        places = []
        size = 0
        for name in _names(requests):
            size = aligned(size)  # each input's rows start aligned and follow one another without a gap
            for request in requests:
                array = request.get(name)
                if type(array) is np.ndarray and array.dtype.kind in _NUMERIC:
                    places.append((request, name, array, size))
                    size += array.nbytes
        if not places:
            return
        pinned, view = self.staging.take(size)
        for _, _, array, offset in places:
            view[offset : offset + array.nbytes] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        framework = self.framework
        copied = framework.upload(pinned[:size], self.device)
        self.staging.pending = framework.marker(self.device)
        for request, name, array, offset in places:
            request[name] = framework.typed(copied, offset, array.dtype, array.shape)

    def settle(self) -> None:
        """A wait on the device's stream came after the last copy: the staged memory is free again."""
        self.staging.pending = None


class Ready:
    """An output already made into python_backend's tensor (a capsule after the batch's wait): sent as it is."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any):
        self.tensor = tensor


_Found = tuple[int, str, Any, Any, str, int, str]
"""A GPU output on its way out: (result's index, output name, tensor, framework, device, byte count, element)."""


class Departure:
    """A batch's GPU outputs out of the instance: to host memory for network readers, as capsules for GPU readers."""

    def __init__(
        self,
        pb_utils: Any,
        model: str,
        output_memory: str,
        pool: int,
        arrival: Arrival | None,
        warn: Callable[[str], None],
    ):
        self.pb_utils = pb_utils
        self.model = model
        self.output_memory = output_memory  # GPU: capsules for readers there; HOST: host memory
        self.pool = pool
        self.arrival = arrival
        self.warn = warn
        self.staging: Staging | None = None
        self.warned = False

    def prepare(self, results: list[Any], convert: Callable[[Any], dict[str, Any] | None]) -> list[Any]:
        """``results`` with each GPU output replaced by what leaves: a host view, or a :class:`Ready` capsule.

        ``convert`` gives a result's outputs checked and converted as its response would send them (None where
        that fails: the response says why). Anything else is left for the response as it is.
        """
        found: list[_Found] = []
        converted: dict[int, dict[str, Any]] = {}
        for index, result in enumerate(results):
            if type(result) is dict:
                for value in result.values():
                    if type(value) is not np.ndarray:
                        break
                else:
                    continue  # numpy only: nothing crosses
            outputs = convert(result)
            if outputs is None:
                continue
            for name, value in outputs.items():
                framework = framework_of(value) if type(value) is not np.ndarray else None
                if framework is None or not framework.batch_transfers:
                    continue
                placed = framework.placed(value)
                if placed is None:
                    continue
                element = framework.element(value)
                if element != "bfloat16":  # numpy cannot hold BF16: it leaves as it did
                    found.append((index, name, value, framework, placed[0], placed[1], element))
                    converted[index] = outputs
        if not found:
            return results
        results = list(results)
        sizes = sum(item[5] for item in found)
        if self.output_memory == GPU and sizes > self.pool:
            self._warn_pool(sizes)
        if self.output_memory == GPU and sizes <= self.pool:
            self._capsules(found, converted)
        elif len(found) == 1:
            self._one_to_host(found[0], converted)
        else:
            self._to_host(found, converted)
        for index, outputs in converted.items():
            results[index] = outputs
        return results

    def _capsules(self, found: list[_Found], converted: dict[int, dict[str, Any]]) -> None:
        self._wait(found)
        from_dlpack = self.pb_utils.Tensor.from_dlpack
        for index, name, value, framework, *_ in found:
            converted[index][name] = Ready(from_dlpack(name, framework.capsule(value)))

    def _one_to_host(self, one: _Found, converted: dict[int, dict[str, Any]]) -> None:
        """One tensor (a stream's token, a lone request's output): copied into a typed view of the staged memory
        that repeats from call to call, so a stream's tokens make no new view (a tensor-API call each on a GPU)."""
        index, name, value, framework, _, nbytes, element = one
        staging = self._staging(framework)
        staging.take(nbytes)
        tensor, array = staging.typed(0, element, framework.shape(value))
        framework.download(tensor, value)
        self._wait([one])
        converted[index][name] = array

    def _to_host(self, found: list[_Found], converted: dict[int, dict[str, Any]]) -> None:
        runs = _runs(sorted(found, key=lambda item: (item[1], item[0])))  # each output's rows, request by request
        size = 0
        laid = []
        for run in runs:
            offset = aligned(size)
            nbytes = sum(item[5] for item in run)
            laid.append((run, offset, nbytes))
            size = offset + nbytes
        framework = found[0][3]
        pinned, view = self._staging(framework).take(size)
        for run, offset, nbytes in laid:
            first = run[0][2]
            source = framework.span(first, nbytes) if len(run) > 1 else framework.raw(first)
            framework.download(pinned[offset : offset + nbytes], source)
        self._wait(found)
        for run, offset, _ in laid:
            for index, name, value, framework, _, nbytes, element in run:
                converted[index][name] = view[offset : offset + nbytes].view(element).reshape(framework.shape(value))
                offset += nbytes

    def _staging(self, framework: Any) -> Staging:
        if self.staging is None or self.staging.framework is not framework:
            self.staging = Staging(framework)
        return self.staging

    def _wait(self, found: list[_Found]) -> None:
        """The batch's one wait (one per GPU its outputs are on: one, but for a callable that spreads them)."""
        devices = {item[4] for item in found}
        for device in devices if len(devices) == 1 else sorted(devices):
            found[0][3].synchronize(device)
        if self.arrival is not None:
            self.arrival.settle()

    def _warn_pool(self, nbytes: int) -> None:
        if self.warned:
            return
        self.warned = True
        self.warn(
            f"model '{self.model}': a batch's GPU outputs ({nbytes} bytes) outgrow tritonserver's CUDA memory pool "
            f"({self.pool} bytes), so they are sent through host memory instead of staying on the GPU; start "
            f"tritonserver with {POOL_FLAG}=<gpu>:<bytes> of at least twice that to keep them there"
        )


def _names(requests: Sequence[dict[str, Any]]) -> list[str]:
    names = list(requests[0])
    for request in requests[1:]:
        names.extend(name for name in request if name not in names)
    return names


def _runs(found: list[_Found]) -> list[list[_Found]]:
    """Consecutive outputs of one name that lie one after another in device memory, with a view over them all
    (``@batch``'s rows of one output): one copy each; anything else, one copy per tensor."""
    runs: list[list[_Found]] = []
    end: tuple[str, str, int] | None = None
    for item in found:
        name, value, framework, device, nbytes = item[1], item[2], item[3], item[4], item[5]
        start = framework.address(value)[1]
        joined = runs and end == (name, device, start)
        # a view over the whole run, where one tensor holds it: whether it exists, never its truth value (a tensor)
        if joined and framework.span(runs[-1][0][2], start + nbytes - _start(runs[-1])) is not None:
            runs[-1].append(item)
        else:
            runs.append([item])
        end = (name, device, start + nbytes)
    return runs


def _start(run: list[_Found]) -> int:
    first = run[0]
    return first[3].address(first[2])[1]  # type: ignore[no-any-return]


def input_reader(framework: Framework, device: str, data_types: dict[str, str], staged: bool) -> Callable[[Any], Any]:
    """How a model that declared ``framework``'s tensors reads each input of a request on ``device``
    (``data_types``: input name -> Triton data type; ``staged``: host inputs wait for the batch's one copy)."""
    as_numpy = frozenset(name for name, data_type in data_types.items() if data_type == STRING)
    through_dlpack = frozenset(name for name, data_type in data_types.items() if data_type == BF16)

    def read(tensor: Any) -> Any:
        name = tensor.name()
        if name in as_numpy:
            return tensor.as_numpy()
        if not tensor.is_cpu():
            return framework.from_backend(tensor)
        if name in through_dlpack:  # as_numpy cannot read BF16
            return _moved(framework, tensor, device)
        if staged:  # moved with the rest of the batch (TritonPythonModel.requests)
            return tensor.as_numpy()
        return framework.adopt(tensor.as_numpy(), device)

    return read


def _moved(framework: Framework, tensor: Any, device: str) -> Any:
    """A CPU input that ``as_numpy`` cannot read (BF16): taken through DLPack, then copied onto the device (or,
    on a CPU instance, into memory of its own, since the request's buffer is freed once it is answered)."""
    value = framework.from_backend(tensor)
    if device == "cpu":
        return framework.copy(value)
    return value.to(device) if framework.name == "torch" else framework.adopt(framework.host(value), device)
