"""What a client sees of a model's error code, by release: the HTTP status and the gRPC status of each.

Read in triton-inference-server/server and python_backend at their release branches:

* python_backend r23.09 and later: ``pb_utils.TritonError(message, code)``, the code one of
  ``TritonError.INVALID_ARG``, ``NOT_FOUND``, ``UNAVAILABLE``, ... (src/pb_stub.cc), carried to the server with
  the response (src/pb_error.cc).
* gRPC (src/grpc/grpc_utils.cc, unchanged r23.10-r26.x): each code its own status, :data:`GRPC_STATUS`.
* HTTP: up to 2.41 (NGC 23.12) every failed inference answers 400 whatever its code; from 2.42 (NGC 24.01,
  server#6713) ``HttpCodeFromError`` answers :data:`HTTP_STATUS` (src/http_server.cc).
* BLS: up to python_backend r25.03 a called model's error reaches its caller as INTERNAL, the message alone
  (src/request_executor.cc makes a ``PbError`` of the message); r25.04 (#398) keeps the code. repogen's runtime
  says the code in the message as well (runtime/failures.py), so a caller reads it on every release.
* An ensemble answers a failed step's error with its code, the message prefixed ``in ensemble 'E', ``.
"""

from __future__ import annotations

from .releases import Release, get_release

__all__ = ["BLS_KEEPS_CODES_FROM", "GRPC_STATUS", "HTTP_STATUS", "HTTP_STATUS_FROM", "http_status"]

HTTP_STATUS_FROM = "24.01"
"""The first release whose HTTP frontend answers an error with its code's status (else always 400)."""
BLS_KEEPS_CODES_FROM = "25.04"
"""The first python_backend whose BLS responses keep the called model's error code."""

HTTP_STATUS = {
    "INTERNAL": 500,
    "NOT_FOUND": 404,
    "UNAVAILABLE": 503,
    "UNSUPPORTED": 501,
    "INVALID_ARG": 400,
    "UNKNOWN": 400,
    "ALREADY_EXISTS": 400,
    "CANCELLED": 400,
}
"""HTTP status by code, from 2.42 (``HttpCodeFromError``)."""
GRPC_STATUS = {
    "INTERNAL": "INTERNAL",
    "NOT_FOUND": "NOT_FOUND",
    "UNAVAILABLE": "UNAVAILABLE",
    "UNSUPPORTED": "UNIMPLEMENTED",
    "INVALID_ARG": "INVALID_ARGUMENT",
    "UNKNOWN": "UNKNOWN",
    "ALREADY_EXISTS": "ALREADY_EXISTS",
    "CANCELLED": "CANCELLED",
}
"""gRPC status (``grpc.StatusCode`` name) by code, on every release repogen serves."""


def http_status(code: str, release: str | Release) -> int:
    """The HTTP status a client of ``release`` gets for an inference failed with ``code``."""
    if get_release(release).version < get_release(HTTP_STATUS_FROM).version:
        return 400
    return HTTP_STATUS[code]
