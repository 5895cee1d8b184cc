"""Whether a request is still wanted: Triton's request cancellation, as the runtime reads it.

python_backend answers ``request.is_cancelled()`` from r23.10 (tritonserver 2.39) on, for a cancelled gRPC
call or stream, ``async_infer(...).cancel()``, a client's timeout and the queue policy's timeouts. Each
answer is one round trip to the server process, so the runtime asks once per request before a callable
runs when it may have waited (``TritonPythonModel.queued_long``), and at a stream's steps after a slow step
or once a while. Where a release has no ``is_cancelled`` the answer is always False: nothing is ever cancelled
there, and nothing breaks.

A BLS stream between two repogen models carries a token in its request id; the callee's side of it is here
(:func:`is_cancelled`), the caller's, a streaming callable's flags and the asking at a stream's steps
(``StreamWatch``) are in runtime/stream_cancellation.py, carried by the models that stream.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

__all__ = ["TOKEN_PREFIX", "Watch", "cancelled_response", "is_cancelled", "token_path"]

TOKEN_PREFIX = "repogen-stream-"


def is_cancelled(request: Any) -> bool:
    """True once ``request`` was cancelled: Triton says so, or the repogen model streaming to it through BLS
    cancelled its token. False where the release cannot say."""
    ask = getattr(request, "is_cancelled", None)
    try:
        if ask is not None and ask() is True:
            return True
    except Exception:  # the server process is gone, or the request was already released: not our call
        return False
    token = _caller_token(request)
    return token is not None and os.path.exists(token_path(token))


def cancelled_response(pb_utils: Any, model: str) -> Any:
    """The answer to a request cancelled before its callable ran: Triton's CANCELLED error where the release
    has error codes (r23.10+), a plain error otherwise."""
    message = f"request cancelled before model '{model}' ran it"
    code = getattr(pb_utils.TritonError, "CANCELLED", None)
    error = pb_utils.TritonError(message) if code is None else pb_utils.TritonError(message, code)
    return pb_utils.InferenceResponse(output_tensors=[], error=error)


def token_path(token: str) -> str:
    return os.path.join(tempfile.gettempdir(), token)


def _caller_token(request: Any) -> str | None:
    """The token of a BLS stream a repogen caller made, from the request's id; None for any other request."""
    read = getattr(request, "request_id", None)
    try:
        request_id = read() if read is not None else ""
    except Exception:
        return None
    return request_id if isinstance(request_id, str) and request_id.startswith(TOKEN_PREFIX) else None


class Watch:
    """Which requests of one ``execute`` are still wanted: :meth:`poll` asks each live one, a round trip to the server
    process each (26-30 µs on 2.51). A stream asks at its steps (runtime/stream_cancellation.py's ``StreamWatch``)."""

    __slots__ = ("_requests", "live")

    def __init__(self, requests: list[Any]):
        self._requests = requests
        self.live = [True] * len(requests)

    def poll(self) -> bool:
        """Ask every live request once; True while any is still wanted."""
        live = self.live
        for index, request in enumerate(self._requests):
            if live[index] and is_cancelled(request):
                live[index] = False
        return any(live)
