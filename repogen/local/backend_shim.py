"""The part of ``triton_python_backend_utils`` the runtime uses, for running models in-process.

With it, ``repogen.local`` drives the very ``TritonPythonModel`` the server runs, so in-process
results follow the same conversion, batching, error and streaming code paths.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import types
from collections import Counter
from typing import Any, Protocol

import numpy as np

from ..runtime.contract import GPU, HOST
from . import dlpack

TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_MEMORY_GPU, TRITONSERVER_MEMORY_CPU = 0, 1  # PreferredMemory's kinds (the values are the stub's)
_log = logging.getLogger("repogen.local")


class TritonError:
    """python_backend's (r23.09+): a message and a code, the codes as class attributes (here, their names)."""

    UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG = "UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG"
    UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED = "UNAVAILABLE", "UNSUPPORTED", "ALREADY_EXISTS", "CANCELLED"

    def __init__(self, message: str, code: str = "INTERNAL"):
        self._message = message
        self._code = code

    def message(self) -> str:
        return self._message

    def code(self) -> str:
        return self._code


class Tensor:
    def __init__(self, name: str, array: Any):
        self._name = name
        self._array = array

    @classmethod
    def from_dlpack(cls, name: str, value: Any) -> Tensor:
        """python_backend's ``from_dlpack`` (src/pb_tensor.cc, r24.10): a capsule is taken as it is; an object is
        asked for one with ``__dlpack__``, on a GPU with ``stream=`` the stub's proxy stream, which the stub then
        waits for (``cudaStreamSynchronize``). Host memory becomes numpy where numpy holds its dtype (BF16 stays the
        framework's, as the stub keeps it: ``as_numpy`` then refuses it)."""
        if name == "":
            raise ValueError("Tensor name cannot be an empty string.")
        if dlpack.is_capsule(value):
            if dlpack.device(value)[0] == dlpack.KDL_CUDA:
                return cls(name, _gpu().adopt(_contiguous(value)))
            value = _Exported(_contiguous(value))
        elif _device_type(value) == dlpack.KDL_CUDA:
            gpu = _gpu()
            index = value.__dlpack_device__()[1]
            proxy = gpu.proxy_stream(gpu.current_device())  # the device current before the stub switches to index
            with gpu.on_device(index):
                capsule = value.__dlpack__(stream=proxy)
            gpu.stream_synchronize(proxy)
            COUNTS["from_dlpack waits"] += 1
            return cls(name, gpu.adopt(_contiguous(capsule)))
        try:
            return cls(name, np.from_dlpack(value))
        except (BufferError, TypeError, RuntimeError):
            return cls(name, value)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if not self.is_cpu():
            raise RuntimeError("Tensor is stored in GPU and cannot be converted to NumPy.")
        if not isinstance(self._array, np.ndarray):
            raise TypeError("Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() instead")
        return self._array

    def is_cpu(self) -> bool:
        return _device_type(self._array) != dlpack.KDL_CUDA

    def to_dlpack(self) -> Any:
        if not self.is_cpu():
            return _gpu().capsule(self._array)
        return self.__dlpack__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        array = self._array
        if isinstance(array, np.ndarray) and not array.flags.writeable:
            array = array.copy()
        return array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


class _Exported:
    """A host capsule as numpy's ``from_dlpack`` takes it (an object with ``__dlpack__``)."""

    def __init__(self, capsule: Any):
        self.capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.KDL_CPU, 0)


def _device_type(value: Any) -> int:
    device = getattr(value, "__dlpack_device__", None)
    return int(device()[0]) if device is not None and not isinstance(value, np.ndarray) else dlpack.KDL_CPU


def _contiguous(capsule: Any) -> Any:
    if not dlpack.c_contiguous(capsule):
        raise ValueError(
            "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported."
        )
    return capsule


class GpuRuntime(Protocol):
    """What the stand-in asks of CUDA, where a process has GPUs (an emulated one: repogen.testing.emulated_gpu)."""

    def current_device(self) -> int: ...
    def on_device(self, index: int) -> Any: ...
    def proxy_stream(self, index: int) -> int: ...
    def stream_synchronize(self, handle: int) -> None: ...
    def adopt(self, capsule: Any) -> Any: ...
    def capsule(self, tensor: Any) -> Any: ...
    def to_host(self, tensor: Any) -> np.ndarray: ...
    def to_pool(self, tensor: Any) -> Any: ...
    def nbytes(self, tensor: Any) -> int: ...


GPU_RUNTIME: GpuRuntime | None = None
"""CUDA, for the stand-in: None where the process has no GPU (python_backend built without one refuses GPU tensors)."""
COUNTS: Counter[str] = Counter()
"""What the server side did with GPU tensors: ``LoadGPUBuffers`` round trips, blocking copies, CUDA IPC fallbacks."""
CUDA_POOL_BYTES = 64 << 20  # tritonserver's --cuda-memory-pool-byte-size default, per GPU


def _gpu() -> GpuRuntime:
    if GPU_RUNTIME is None:
        raise RuntimeError("DLPack capsule passed pointer to memory allocated on GPU device, when GPU is not available")
    return GPU_RUNTIME


def deliver(responses: list[Any], output_memory: str | list[str] = HOST) -> list[Any]:
    """What the server does with a batch's responses once ``execute`` returned: GPU outputs fetched from the stub in
    one ``LoadGPUBuffers`` round trip, each copied (blocking) to host memory for a network reader, or, for a reader
    on a GPU, into the CUDA pool (past it, handed over by CUDA IPC, uncached). ``output_memory``: the readers' memory
    (HOST or GPU), one for the batch or per response (a batch the dynamic batcher merged from a GPU BLS caller and
    network clients)."""
    readers = output_memory if isinstance(output_memory, list) else [output_memory] * len(responses)
    on_gpu = [
        (t, reader_memory)
        for r, reader_memory in zip(responses, readers, strict=True)
        if r is not None and not r.has_error()
        for t in r._tensors
        if not t.is_cpu()
    ]
    if not on_gpu:
        return responses
    gpu = _gpu()
    COUNTS["LoadGPUBuffers"] += 1
    pooled = 0
    for tensor, reader_memory in on_gpu:
        if reader_memory != GPU:
            COUNTS["blocking d2h copies"] += 1
            tensor._array = gpu.to_host(tensor._array)
            continue
        pooled += gpu.nbytes(tensor._array)
        if pooled <= CUDA_POOL_BYTES:
            COUNTS["pool copies"] += 1
            tensor._array = gpu.to_pool(tensor._array)
        else:
            if not COUNTS["CUDA IPC"]:
                _log.warning(
                    "Failed to allocate memory from CUDA memory pool for output tensor: will use CUDA IPC for GPU "
                    "output transfer."
                )
            COUNTS["CUDA IPC"] += 1
    return responses


def get_input_tensor_by_name(request: InferenceRequest, name: str) -> Tensor | None:
    """python_backend's reader of one input (hand-written models use it; the runtime reads ``inputs()``)."""
    return next((tensor for tensor in request.inputs() if tensor.name() == name), None)


class PreferredMemory:
    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceResponse:
    def __init__(self, output_tensors: list[Tensor] | None = None, error: TritonError | None = None):
        self._tensors = list(output_tensors or [])
        self._error = error

    def output_tensors(self) -> list[Tensor]:
        return self._tensors

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error


class ResponseSender:
    """Decoupled responses go to a queue the caller drains while the model still runs."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[InferenceResponse | None, int]] = queue.Queue()

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        """Queued with its arrays copied, as the stub's ``Send`` copies them into shared memory there and then: the
        model may reuse their memory for its next response (runtime/transfers.py's page-locked buffer does)."""
        if response is not None and not response.has_error():
            deliver([response])  # a decoupled response's GPU tensors are fetched at its send
            copied = [
                Tensor(t.name(), t._array.copy()) if isinstance(t._array, np.ndarray) else t for t in response._tensors
            ]
            response = InferenceResponse(output_tensors=copied)
        self.queue.put((response, flags))


class InferenceRequest:
    """A request as the runtime reads it (``inputs()``, ``parameters()``, a response sender)."""

    def __init__(
        self, tensors: list[Tensor], parameters: dict[str, Any] | None = None, requested: list[str] | None = None
    ):
        self._tensors = tensors
        self._parameters = json.dumps(parameters or {})
        self._requested = set(requested or ())  # what the client asked for: every declared output when it named none
        self.sender = ResponseSender()
        self.cancelled = False  # set by the reader that stops early, as a cancelled gRPC stream does

    def is_cancelled(self) -> bool:
        return self.cancelled

    def request_id(self) -> str:
        return ""

    def inputs(self) -> list[Tensor]:
        return self._tensors

    def parameters(self) -> str:
        return self._parameters

    def requested_output_names(self) -> set[str]:
        return self._requested

    def get_response_sender(self) -> ResponseSender:
        return self.sender


class Logger:
    @staticmethod
    def log_info(message: str) -> None:
        _log.info(message)

    @staticmethod
    def log_warn(message: str) -> None:
        _log.warning(message)

    @staticmethod
    def log_error(message: str) -> None:
        _log.error(message)

    @staticmethod
    def log_verbose(message: str) -> None:
        _log.debug(message)


def install() -> types.ModuleType:
    """Make ``import triton_python_backend_utils`` resolve to this module (never over the real one)."""
    existing = sys.modules.get("triton_python_backend_utils")
    if existing is None:
        sys.modules["triton_python_backend_utils"] = sys.modules[__name__]
        return sys.modules[__name__]
    return existing
