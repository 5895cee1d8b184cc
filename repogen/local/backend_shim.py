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
from typing import Any

import numpy as np

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
        """A tensor in host memory, as numpy where numpy holds its dtype (BF16 stays the framework's, as the
        stub keeps it: ``as_numpy`` then refuses it)."""
        try:
            return cls(name, np.from_dlpack(value))
        except (BufferError, TypeError, RuntimeError):
            return cls(name, value)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if not isinstance(self._array, np.ndarray):
            raise TypeError("Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() instead")
        return self._array

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        return self.__dlpack__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        array = self._array
        if isinstance(array, np.ndarray) and not array.flags.writeable:
            array = array.copy()
        return array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._array.__dlpack_device__()


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
            copied = [
                Tensor(t.name(), t._array.copy()) if isinstance(t._array, np.ndarray) else t for t in response._tensors
            ]
            response = InferenceResponse(output_tensors=copied)
        self.queue.put((response, flags))


class InferenceRequest:
    """A request as the runtime reads it (``inputs()``, ``parameters()``, a response sender)."""

    def __init__(self, tensors: list[Tensor], parameters: dict[str, Any] | None = None):
        self._tensors = tensors
        self._parameters = json.dumps(parameters or {})
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
