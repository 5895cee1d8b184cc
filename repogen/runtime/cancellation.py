"""Whether a request is still wanted: Triton's request cancellation, as the runtime reads it.

python_backend answers ``request.is_cancelled()`` from r23.10 (tritonserver 2.39) on, for a cancelled gRPC
call or stream, ``async_infer(...).cancel()``, a client's timeout and the queue policy's timeouts. Each
answer is one round trip to the server process, so the runtime asks once per request before a callable
runs when it may have waited (``TritonPythonModel.queued_long``), and at a stream's steps after a slow step
or once a while (``Watch.step``). Where a release has no ``is_cancelled`` the answer is always False: nothing
is ever cancelled there, and nothing breaks.

A BLS stream between two repogen models carries a token in its request id; the callee's side of it is here
(:func:`is_cancelled`), the caller's and a streaming callable's flags are in runtime/stream_cancellation.py, carried
by the models that stream.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

__all__ = ["SLOW_STEP_S", "STREAM_POLL_S", "TOKEN_PREFIX", "Watch", "cancelled_response", "is_cancelled", "token_path"]

TOKEN_PREFIX = "repogen-stream-"
SLOW_STEP_S = 0.001  # a stream step that took this long is followed by asking (Watch.step)
STREAM_POLL_S = 0.005  # faster steps are asked about this often


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
    """Which requests of one ``execute`` are still wanted, asked at the steps of their stream.

    Asking costs a round trip to the server process (26-30 µs on 2.51), about what sending a token costs. So
    a stream is asked after each step its generator took ``SLOW_STEP_S`` or more to make (tokens of a language
    model, tens of ms: it stops at the first step after its cancellation, and asking costs it at most 3 %),
    and otherwise once its generator has worked ``STREAM_POLL_S`` since it was last asked (at most that much
    work is done after the cancellation; asking costs under 1 % of it). Only the generator's own time counts,
    from the end of a send to its next step: a send waits for the server, and on a busy host that wait alone
    can pass either limit, which would add a round trip to steps that did no work. ``asked``: whether the
    requests are asked now, before the first step.
    """

    __slots__ = ("_requests", "live", "resumed", "work")

    def __init__(self, requests: list[Any], asked: bool = False):
        self._requests = requests
        self.live = [True] * len(requests)
        self.work = 0.0
        """The generator's time since the requests were last asked; ``step`` adds each step's."""
        self.resumed = time.perf_counter()
        """When the generator was last resumed (its step began); the stream sets it after each send."""
        if asked:
            self.poll()

    def poll(self) -> bool:
        """Ask every live request once; True while any is still wanted."""
        live = self.live
        for index, request in enumerate(self._requests):
            if live[index] and is_cancelled(request):
                live[index] = False
        self.work = 0.0
        return any(live)

    def step(self) -> bool:
        """At a step of the stream: True while any request is still wanted, asking them when it is due."""
        took = time.perf_counter() - self.resumed
        self.work += took
        if took < SLOW_STEP_S and self.work < STREAM_POLL_S:
            return True
        return self.poll()
