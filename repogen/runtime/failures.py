"""How whatever a callable raised becomes one request's error: a one-line message, a code, a response, log lines.

The message is ``"<Type>: <message> (at app.py:13, in f)"`` for every exception, ``SystemExit`` and
``KeyboardInterrupt`` included: never a traceback and no server path (the server log keeps the traceback). An
exception carrying another code than INTERNAL (runtime/errors.py) says it after its type,
``"NegativeInput [INVALID_ARG]: ..."``: python_backend before r25.04 hands a BLS caller every error as INTERNAL
(request_executor.cc makes a ``PbError`` of the message alone; python_backend #398 keeps the code), so the
caller's runtime reads the code back from the message (runtime/call_errors.py's ``answered_code``), and a client
reading the message sees it too.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import triton_python_backend_utils as pb_utils

from .errors import INTERNAL, error_code


def error_message(exc: BaseException) -> str:
    """``"<Type>: <message> (at app.py:13, in f)"``: never a traceback, and no server path, even for ``SystemExit``.

    The place is the innermost frame of the user's own code: shipped sources compile under the relative
    path the user wrote (``app.py``, ``pkg/helpers.py``), while the runtime's, the model.py's and the
    packages' files have absolute paths.
    """
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # a hostile __str__ must not turn one failed request into a crashed stub
        text = "<the exception's message could not be printed>"
    code = error_code(exc)
    if code != INTERNAL:
        name = f"{name} [{code}]"
    message = f"{name}: {text}" if text else name
    place = user_frame(exc)
    return f"{message} (at {place})" if place else message


def user_frame(exc: BaseException) -> str | None:
    """``app.py:13, in checked`` for the innermost traceback frame in a shipped source, else None."""
    found = None
    try:
        for frame, line in traceback.walk_tb(exc.__traceback__):
            filename = frame.f_code.co_filename
            if filename and not os.path.isabs(filename) and not filename.startswith("<"):
                found = f"{filename}:{line}, in {frame.f_code.co_name}"
    except Exception:  # a traceback that cannot be walked: the message alone
        return None
    return found


def error_response(message: str, code: str = INTERNAL) -> Any:
    """An error response with Triton's ``code`` where this release's ``TritonError`` has codes (r23.09+)."""
    return pb_utils.InferenceResponse(output_tensors=[], error=triton_error(pb_utils, message, code))


def triton_error(backend: Any, message: str, code: str = INTERNAL) -> Any:
    """``backend.TritonError(message, code)``; the message alone where the release has no such code."""
    value = getattr(backend.TritonError, code, None) if code != INTERNAL else None
    return backend.TritonError(message) if value is None else backend.TritonError(message, value)


def log(level: str, message: str) -> None:
    """Into the server's log through ``pb_utils.Logger`` (attached to pb_utils after import; may be absent)."""
    logger = getattr(getattr(pb_utils, "Logger", None), level, None)
    if logger is not None:
        logger(message)


def log_failure(model: str, exc: BaseException) -> None:
    """The failure in one line, then its traceback one log record per line.

    2.51's logger writes a record's newlines as ``\\n``, which leaves a multi-line traceback unreadable.
    """
    try:
        lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()
    except Exception:  # a hostile __str__ or __traceback__: the type still says what happened
        lines = [type(exc).__name__]
    log("log_error", f"model '{model}': infer_func raised {error_message(exc)}; traceback:")
    for line in lines:
        log("log_error", f"model '{model}' | {line}")


def out_of_gpu_memory(exc: BaseException) -> bool:
    """A framework's failed GPU allocation: torch's and cupy's ``OutOfMemoryError``, older torch's RuntimeError, and
    CUDA's own ``cudaErrorMemoryAllocation`` as torch raises it ("CUDA error: out of memory"), which is what a failed
    page-locked host allocation (``pin_memory=True``, runtime/transfers.py's staging) gives. Its answer is
    runtime/devices.py's ``out_of_gpu_memory_message``, where the model carries devices.py."""
    return type(exc).__name__ == "OutOfMemoryError" or (
        isinstance(exc, RuntimeError) and ("CUDA out of memory" in str(exc) or "CUDA error: out of memory" in str(exc))
    )


def results_count_message(model: str, results: Any, expected: int) -> str:
    """Why ``results`` is not one result per request: a dict alone (PyTriton's ``@batch`` habit), or a count."""
    if isinstance(results, dict):
        return (
            f"model '{model}' returned a dict; an undecorated infer_func receives a list of "
            f"{expected} request(s) and must return a list with one dict per request (or use @batch)"
        )
    found = len(results) if isinstance(results, (list, tuple)) else type(results).__name__
    return f"model '{model}' returned {found} result(s) for {expected} request(s); return one per request"
