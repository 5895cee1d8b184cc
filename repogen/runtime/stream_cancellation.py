"""A stream's cancellation at both ends: the flags a streaming callable's threads read, and the token a BLS caller
cancels its stream by (runtime/cancellation.py reads requests; this module is carried only by the models that
stream: decoupled, async or holding BLS clients).

A BLS stream is a request this stub made, not one it serves, so its callee cannot learn through Triton
that the caller went away before python_backend r25.04 (NGC 25.04), whose response iterators have
``cancel()``. For older releases a stream between two repogen models carries a token in its request id
(``repogen-stream-...``); the caller cancels it by creating a file of that name in the temporary
directory both stubs share (they are children of one server), and the callee looks for it where it would
ask ``is_cancelled()``. The caller removes the file once the callee has ended the stream.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import time
from typing import Any

from .cancellation import TOKEN_PREFIX, Watch, token_path

__all__ = ["SLOW_STEP_S", "STREAM_POLL_S", "StreamCancelled", "StreamWatch", "cancel_stream", "forget_stream",
           "serving_stream", "stream_cancelled", "stream_done", "stream_token"]  # fmt: skip

SLOW_STEP_S = 0.001  # a stream step that took this long is followed by asking (StreamWatch.step)
STREAM_POLL_S = 0.005  # faster steps are asked about this often

_tokens = itertools.count(1)
# Random per process: a token file left by a stub killed mid-drain must not cancel a later process's stream
# that reuses its pid (containers restart with the same pids).
_PROCESS = f"{os.getpid()}-{os.urandom(4).hex()}"
# The flags made in the stream being served: a context variable, since concurrent async streams
# (runtime/concurrency.py) each run in a task of their own, with a context of their own.
_serving: contextvars.ContextVar[list[StreamCancelled] | None] = contextvars.ContextVar("repogen_stream", default=None)


class StreamCancelled:
    """What :func:`stream_cancelled` returns: true once the stream it was made in was cancelled by its readers.

    Called with any arguments it answers the same, so it is a stopping criterion as Hugging Face's ``generate``
    takes one (``stopping_criteria=[stream_cancelled()]``): the thread that makes the tokens stops at its next one
    after the stream's generator was closed for a cancellation, instead of making all of them for nobody.
    """

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        return self.cancelled

    def __bool__(self) -> bool:
        return self.cancelled

    def __repr__(self) -> str:
        return f"<stream_cancelled: {self.cancelled}>"


def stream_cancelled() -> StreamCancelled:
    """A flag that turns true when the stream being served now is cancelled (its readers left), for the threads a
    streaming callable starts: the generator itself is closed at its next ``yield``, but a thread it handed the work
    to (``executor.submit(model.generate, ...)``) goes on unless it asks. Made outside a stream (a model that does
    not stream, a class's ``__init__``), it never turns true. Not in PyTriton."""
    flag = StreamCancelled()
    serving = _serving.get()
    if serving is not None:
        serving.append(flag)
    return flag


def serving_stream() -> list[StreamCancelled]:
    """Start collecting the flags a stream's body makes (the runtime, before it iterates a stream's generator)."""
    flags: list[StreamCancelled] = []
    _serving.set(flags)
    return flags


def stream_done(flags: list[StreamCancelled], cancelled: bool) -> None:
    """The stream ended; ``cancelled``: because its readers left, which its flags now say."""
    if cancelled:
        for flag in flags:
            flag.cancelled = True
    if _serving.get() is flags:
        _serving.set(None)


def stream_token() -> str:
    """A request id for one BLS stream this process makes: unique on this host while the stream lives."""
    return f"{TOKEN_PREFIX}{_PROCESS}-{next(_tokens)}"


def cancel_stream(responses: Any, token: str) -> None:
    """Ask the callee of a BLS stream to stop: through Triton where the release can, else through the token."""
    cancel = getattr(responses, "cancel", None)
    if cancel is not None:
        try:
            cancel()
            return
        except Exception:  # a release whose cancel() refuses this iterator: the token still works
            pass
    try:
        with open(token_path(token), "x"):
            pass
    except OSError:  # already there, or no writable temporary directory: the stream then runs to its end
        pass


def forget_stream(token: str) -> None:
    """Remove a cancelled stream's token once its callee has ended the stream."""
    with contextlib.suppress(OSError):  # never created (cancelled through Triton), or gone already
        os.unlink(token_path(token))


class StreamWatch(Watch):
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

    __slots__ = ("resumed", "work")

    def __init__(self, requests: list[Any], asked: bool = False):
        super().__init__(requests)
        self.work = 0.0
        """The generator's time since the requests were last asked; ``step`` adds each step's."""
        self.resumed = time.perf_counter()
        """When the generator was last resumed (its step began); the stream sets it after each send."""
        if asked:
            self.poll()

    def poll(self) -> bool:
        """Ask every live request once; True while any is still wanted."""
        self.work = 0.0
        return super().poll()

    def step(self, sharing: int = 1) -> bool:
        """At a step of the stream: True while any request is still wanted, asking them when it is due. ``sharing``:
        how many streams one event loop was serving meanwhile (runtime/concurrency.py), whose steps ran between this
        one's (``await asyncio.sleep(0)``): its own share of the time taken is what counts, or 8 streams of 0.3 ms
        tokens would each be asked after every token, a round trip per token (issue 57's GPU run, c=8)."""
        took = (time.perf_counter() - self.resumed) / sharing
        self.work += took
        if took < SLOW_STEP_S and self.work < STREAM_POLL_S:
            return True
        return self.poll()
