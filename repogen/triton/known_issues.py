"""Bugs of the stock server that repogen works around, with the releases they affect.

One definition per bug, read by the tests (which expect hand-written code to fail exactly where
the bug is) and by the docs' table (docs/known-issues.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .releases import Release, get_release, version_tuple

__all__ = [
    "BLS_STREAM_UNANSWERED",
    "BLS_STREAM_WITHOUT_GIL",
    "GRPC_CANCEL_CRASH",
    "HTTP_STREAM_DISCONNECT_CRASH",
    "KnownIssue",
    "error_responses_count_as_success",
]


@dataclass(frozen=True)
class KnownIssue:
    """A server bug that shows on a range of tritonserver releases when the stub runs some Pythons."""

    title: str
    fixed_in: str
    """The first NGC release (``yy.mm``) whose python_backend has the fix."""
    min_python: str
    """The oldest Python ``major.minor`` on which the bug shows (older ones race silently, or not at all)."""
    summary: str

    def affects(self, release: str | Release, python: str) -> bool:
        """Whether ``release`` served by a stub of Python ``python`` (``"3.12"``) shows the bug."""
        before_fix = get_release(release).version < get_release(self.fixed_in).version
        return before_fix and version_tuple(python) >= version_tuple(self.min_python)


#: NGC 24.11 shows it: its stub embeds Python 3.12 (Ubuntu 24.04) and its python_backend is r24.11.
BLS_STREAM_WITHOUT_GIL = KnownIssue(
    title="A drained decoupled BLS stream kills the consumer's stub",
    fixed_in="24.12",
    min_python="3.12",
    summary=(
        "python_backend up to r24.11 may destroy a BLS ResponseIterator, and the numpy arrays of the responses it "
        "kept, in the stub's stub-to-parent thread without the GIL (~PbTensor takes the GIL from r24.12, "
        "python_backend#390). On Python 3.12 that thread's free() of a Python object dereferences a NULL thread "
        "state: SIGSEGV, after which every request gets \"Stub process '<model>_0_0' is not healthy\"."
    ),
)


#: Seen on NGC 23.10 (tritonserver 2.39) only; python_backend r23.12 (2.41) has the fix it is put down to.
BLS_STREAM_UNANSWERED = KnownIssue(
    title="Now and then a decoupled BLS stream is never answered",
    fixed_in="23.12",
    min_python="3.10",
    summary=(
        "On tritonserver 2.39 (python_backend r23.10) a BLS call to a decoupled model went unanswered once in 600 "
        "requests, hand-written code and repogen's runtime alike (the pipeline example's Ticker, one request after "
        "another), and once failed a liveness probe in a test run; r23.12 fixed a decoupled BLS hang "
        "(python_backend#325). Rare: 6,000 requests in a row on an idle machine were all answered."
    ),
)


#: Seen on tritonserver 2.39 (NGC 23.10); 2.41 (NGC 23.12) cancels such a request instead.
HTTP_STREAM_DISCONNECT_CRASH = KnownIssue(
    title="An HTTP generate_stream reader that disconnects mid-stream crashes the server",
    fixed_in="23.12",
    min_python="3.0",
    summary=(
        "tritonserver 2.39's HTTP frontend has no hook for a connection closed before its reply (RequestFiniHook, "
        "src/http_server.cc, from r23.12, which cancels the request): a generate_stream reader that disconnects "
        "while its decoupled model still streams left the server dead with signal 11 (seen on 2.39 + Python 3.10)."
    ),
)


#: Seen on tritonserver 2.51 (NGC 24.10): the 10,000-stream gRPC soak crashed it in one CI run of three, and in
#: most soaks on a loaded machine, hand-written models alike; over HTTP never. Fixed upstream in two steps.
GRPC_CANCEL_CRASH = KnownIssue(
    title="Cancelled gRPC streams now and then crash the server",
    fixed_in="25.04",
    min_python="3.0",
    summary=(
        "tritonserver's gRPC frontend races when clients cancel streams whose responses are still being written: "
        "the server dies with signal 11 (or 6) in its own gRPC code (server#7368 and #8034; fixed by #7840 in 2.53, "
        "NGC 24.12, and #8078 in 2.57, NGC 25.04, both in src/grpc/stream_infer_handler.cc). A hand-written "
        "decoupled model crashes it as repogen's does; HTTP readers that disconnect do not."
    ),
)


#: The first release measured to count a Python model's error response as a *successful* request in
#: its statistics and ``nv_inference_request_failure`` (2.39 and 2.41 count it as failed; releases
#: between 2.41 and 2.51 were not measured). The runtime's ``repogen_inference_request_failure``
#: counts them on every release (repogen/runtime/metrics.py).
ERROR_RESPONSES_COUNT_AS_SUCCESS_FROM = "2.51.0"


def error_responses_count_as_success(server_version: str) -> bool:
    """Whether tritonserver ``server_version`` (``"2.51.0"``) counts an error response as a success."""
    return version_tuple(server_version) >= version_tuple(ERROR_RESPONSES_COUNT_AS_SUCCESS_FROM)
