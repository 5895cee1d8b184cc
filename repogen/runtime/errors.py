"""Exceptions a served callable can raise to steer how the runtime answers, and the error code each carries.

A callable fails one request with a code by raising an :class:`InferenceError` of that code: the client sees
Triton's status for it (HTTP 400/404/503 on tritonserver 2.42+, gRPC INVALID_ARGUMENT/NOT_FOUND/UNAVAILABLE on
every release). Anything else a callable raises is INTERNAL (HTTP 500). Codes are Triton's names, those of
``pb_utils.TritonError`` (``"INVALID_ARG"``, ...), so the runtime hands them to the backend as they are.
What a BLS call raises in its caller (``ModelCallError``, ``ModelCallTimeout``) is in runtime/call_errors.py, carried
by the models that make such calls.
"""

from __future__ import annotations

INTERNAL = "INTERNAL"
"""The server's (or the callable's) fault: HTTP 500 on tritonserver 2.42+, gRPC INTERNAL."""
INVALID_ARG = "INVALID_ARG"
"""The client's fault, not to be retried: HTTP 400, gRPC INVALID_ARGUMENT."""
NOT_FOUND = "NOT_FOUND"
"""What the request names does not exist: HTTP 404, gRPC NOT_FOUND."""
UNAVAILABLE = "UNAVAILABLE"
"""Not now, try again (elsewhere): HTTP 503, gRPC UNAVAILABLE."""
UNSUPPORTED = "UNSUPPORTED"
"""HTTP 501, gRPC UNIMPLEMENTED."""
ALREADY_EXISTS = "ALREADY_EXISTS"
CANCELLED = "CANCELLED"
UNKNOWN = "UNKNOWN"

CODES = (INTERNAL, INVALID_ARG, NOT_FOUND, UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED, UNKNOWN)
"""Every code ``pb_utils.TritonError`` has (python_backend r23.09 and later), by its name there."""
CLIENT_FAULTS = frozenset({INVALID_ARG, NOT_FOUND})
"""Codes that say one request was wrong: a batch failing with one is answered request by request (triton_model)."""


class InferenceError(Exception):
    """A request-level failure: the client receives the message, the model keeps serving.

    Its :attr:`code` is INTERNAL; the subclasses below carry the others. ``code=`` sets one on an instance (a
    :class:`ModelCallError` carries the code the called model answered with); it must be one of :data:`CODES`.
    """

    code: str = INTERNAL

    def __init__(self, *args: object, code: str | None = None):
        super().__init__(*args)
        if code is not None:
            if code not in CODES:
                raise ValueError(f"error code {code!r} is not one of Triton's: {', '.join(CODES)}")
            self.code = code


class InvalidArgumentError(InferenceError):
    """The request is wrong (a value out of range, inputs that contradict each other): HTTP 400, gRPC
    INVALID_ARGUMENT. Clients and load balancers do not retry it."""

    code = INVALID_ARG


class NotFoundError(InferenceError):
    """What the request asks for does not exist (an id, a key, an adapter): HTTP 404, gRPC NOT_FOUND."""

    code = NOT_FOUND


class UnavailableError(InferenceError):
    """The model cannot serve this request now (a dependency is down, a queue is full): HTTP 503, gRPC
    UNAVAILABLE, which clients and load balancers retry, here or elsewhere."""

    code = UNAVAILABLE


class PyTritonError(Exception):
    """PyTriton's root exception (``pytriton.exceptions.PyTritonError``), so that ``except PyTritonError`` keeps
    catching what it caught there. Raised from a callable it is INTERNAL, as any exception."""

    @property
    def message(self) -> str:
        """PyTriton's: the exception's message."""
        return str(self)


class PyTritonBadParameterError(PyTritonError, InvalidArgumentError):
    """PyTriton's name for a bad parameter; raised from a callable, the client's fault (HTTP 400, gRPC
    INVALID_ARGUMENT), as :class:`InvalidArgumentError`."""


class PyTritonUnrecoverableError(PyTritonError):
    """The model cannot continue: the runtime fails the request and asks the stub to exit.

    Named after PyTriton's exception of the same purpose so migrated code keeps working.
    """


class PayloadError(RuntimeError):
    """The model's pickled payload cannot be loaded safely (hash, version or import mismatch)."""


def error_code(exc: BaseException) -> str:
    """The code ``exc`` answers its request with: its own where it carries one, else INTERNAL."""
    code = getattr(exc, "code", INTERNAL) if isinstance(exc, InferenceError) else INTERNAL
    return code if code in CODES else INTERNAL
