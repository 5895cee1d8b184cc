"""What a BLS call carries beside its tensors: a model version, parameters, a timeout, a sequence's id and flags.

One home for the DSL's ``ModelHandle`` (which records them, and runs them in process) and the runtime's BLS client
(which sends them as ``pb_utils.InferenceRequest``'s keywords). The rules are python_backend's (its
``InferenceRequest`` constructor, r23.10 to r26.x): parameter values are ``bool``, ``int`` or ``str``; a correlation id
is an unsigned 64-bit int, or a string from r24.xx; the timeout is in microseconds; the sequence flags are Triton's
``TRITONSERVER_REQUEST_FLAG_SEQUENCE_START`` (1) and ``..._END`` (2). Triton enforces a timeout only while the request
waits in a dynamic batcher's queue whose policy allows overriding it (core's ``scheduler_utils.cc``); the caller's
wait is bounded here whatever the called model does (``repogen.runtime.bls``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SEQUENCE_END", "SEQUENCE_START", "CallOptions"]

SEQUENCE_START = 1  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_START (tritonserver.h)
SEQUENCE_END = 2  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
_UINT64 = 1 << 64


class CallOptions:
    """Immutable; each ``with_*`` returns a copy. The defaults are python_backend's (latest version, none set)."""

    __slots__ = ("correlation_id", "flags", "parameters", "timeout_s", "version")

    def __init__(
        self,
        version: int = -1,
        parameters: Mapping[str, bool | int | str] | None = None,
        timeout_s: float | None = None,
        correlation_id: int | str = 0,
        flags: int = 0,
    ):
        self.version = version
        self.parameters = dict(parameters) if parameters else None
        self.timeout_s = timeout_s
        self.correlation_id = correlation_id
        self.flags = flags

    def with_version(self, version: int) -> CallOptions:
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"a model version is a positive int (a version directory's number), found {version!r}")
        return self._copy(version=version)

    def with_parameters(self, parameters: Mapping[str, Any]) -> CallOptions:
        if not isinstance(parameters, Mapping):
            raise TypeError(f"parameters are a mapping of str to bool, int or str, found {type(parameters).__name__}")
        for key, value in parameters.items():
            if not isinstance(key, str):
                raise TypeError(f"parameter names are str, found {key!r}")
            if not isinstance(value, (bool, int, str)):
                raise TypeError(
                    f"parameter {key!r} is {type(value).__name__} {value!r}; a BLS request's parameters are bool, int "
                    "or str (python_backend's rule): send a float as a str"
                )
        return self._copy(parameters={**(self.parameters or {}), **parameters})

    def with_timeout(self, seconds: float) -> CallOptions:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ValueError(f"a timeout is a positive number of seconds, found {seconds!r}")
        return self._copy(timeout_s=float(seconds))

    def with_sequence(self, correlation_id: int | str, start: bool = False, end: bool = False) -> CallOptions:
        if isinstance(correlation_id, bool) or not isinstance(correlation_id, (int, str)):
            raise TypeError(f"a correlation id is an int or a str, found {type(correlation_id).__name__}")
        if isinstance(correlation_id, int) and not 0 < correlation_id < _UINT64:
            raise ValueError(f"an int correlation id is in 1..2**64-1 (0 means none), found {correlation_id}")
        if isinstance(correlation_id, str) and not correlation_id:
            raise ValueError("a str correlation id is not empty (empty means none)")
        flags = (SEQUENCE_START if start else 0) | (SEQUENCE_END if end else 0)
        return self._copy(correlation_id=correlation_id, flags=flags)

    def request_keywords(self) -> dict[str, Any]:
        """``pb_utils.InferenceRequest``'s keywords for what is set (nothing for a default: any release takes it)."""
        found: dict[str, Any] = {}
        if self.version != -1:
            found["model_version"] = self.version
        if self.parameters:
            found["parameters"] = dict(self.parameters)
        if self.timeout_s is not None:
            found["timeout"] = max(1, round(self.timeout_s * 1e6))
        if self.correlation_id:
            found["correlation_id"] = self.correlation_id
        if self.flags:
            found["flags"] = self.flags
        return found

    @property
    def sequence(self) -> tuple[int | str, bool, bool] | None:
        """``(correlation id, start, end)`` where a sequence is set, else None."""
        if not self.correlation_id:
            return None
        return self.correlation_id, bool(self.flags & SEQUENCE_START), bool(self.flags & SEQUENCE_END)

    def _copy(self, **changes: Any) -> CallOptions:
        fields = {
            name: getattr(self, name) for name in ("version", "parameters", "timeout_s", "correlation_id", "flags")
        }
        return CallOptions(**{**fields, **changes})

    def __bool__(self) -> bool:
        return bool(self.request_keywords())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CallOptions) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(repr(self._key()))

    def _key(self) -> tuple[Any, ...]:
        return (self.version, sorted((self.parameters or {}).items()), self.timeout_s, self.correlation_id, self.flags)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CallOptions, (self.version, self.parameters, self.timeout_s, self.correlation_id, self.flags))

    def __repr__(self) -> str:
        return f"CallOptions({', '.join(f'{k}={v!r}' for k, v in self.request_keywords().items())})"
