"""Letting go of a BLS response stream in the one thread where that is safe.

A decoupled BLS call (``InferenceRequest(...).exec(decoupled=True)``) returns a ``ResponseIterator``
that two owners share: the Python object the caller iterates, and an entry in the stub's
``response_iterator_map_``. When the last response arrives the iterator asks the stub's
stub-to-parent thread to erase that entry (a "cleanup id" on a FIFO queue). Whichever owner lets go
last destroys the iterator and, with it, every response it kept and their tensors' numpy arrays.
If that is the stub-to-parent thread, it frees Python objects without holding the GIL: python_backend
up to r24.11 (tritonserver 2.52) does not take the GIL in ``~PbTensor`` (r24.12 does, #390). On
Python 3.10 that is a silent data race; on Python 3.12, where the allocator's state is reached
through the current thread state (NULL in that thread), the stub dies with SIGSEGV and every later
request gets "Stub process '<model>_0_0' is not healthy". A plain ``for response in
request.exec(decoupled=True)`` loses that race most of the time.

So a drained iterator is not dropped at once: it is *retired* here, and released only after the
stub-to-parent thread has certainly erased its entry. The proof is a barrier on the same FIFO
queue: ``request.is_cancelled()`` on a request this instance is executing enqueues a message behind
the cleanup id and waits until that thread has answered it. After it returns, the Python object
holds the last reference, and dropping it here (a Python thread, holding the GIL) is safe. Without
an executing request (a stream drained outside ``execute``, or a request already cancelled, whose
answer is cached and waits for nothing) the iterator is kept for ``GRACE_S`` seconds instead.
"""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = [
    "GRACE_S",
    "consumer",
    "consumers",
    "executing",
    "executing_now",
    "pending",
    "retire",
    "stream_barrier_problem",
]

# How long a retired iterator is kept when no barrier can be had. The cleanup it waits for is one
# message to the parent process (microseconds); seconds leave room for a loaded machine.
GRACE_S = 5.0

_lock = threading.Lock()
_retired: list[tuple[float, Any]] = []  # (monotonic time retired, response iterator)
_executing: Any = None  # a request this instance is executing: the barrier's target
_consumers = 0  # decoupled-model clients unpickled into this stub's payload


def consumer() -> None:
    """Count a client of a decoupled model (``ModelClient.__init__``): this payload drains streams."""
    global _consumers
    _consumers += 1


def consumers() -> int:
    """How many clients of decoupled models this stub holds; a model with any keeps the general
    ``execute``, which records the request in flight (a specialized one does not)."""
    return _consumers


def executing(request: Any) -> None:
    """Record a request of the batch ``execute`` is serving (None once it has answered).

    Only a request still in flight may be asked ``is_cancelled()``: for one already answered the
    parent process would look up a request it has released.
    """
    global _executing
    _executing = request


def executing_now() -> Any:
    """The request ``executing`` recorded (None: none in flight); runtime.concurrency keeps one of its calls' there."""
    return _executing


def retire(responses: Any) -> None:
    """Keep ``responses`` (a drained, or abandoned, response iterator) until it is safe to release."""
    now = time.monotonic()
    with _lock:
        _retired.append((now, responses))
        count = len(_retired)
    del responses
    if _barrier(_executing):
        with _lock:
            released = _retired[:count]  # those retired before the barrier; later ones wait for the next
            del _retired[:count]
    else:
        with _lock:
            keep = [entry for entry in _retired if now - entry[0] < GRACE_S]
            released = [entry for entry in _retired if now - entry[0] >= GRACE_S]
            _retired[:] = keep
    del released  # the last references go here: in a Python thread, holding the GIL


def pending() -> int:
    """How many retired iterators are still held (tests and diagnostics)."""
    with _lock:
        return len(_retired)


def _barrier(request: Any) -> bool:
    """True once the stub-to-parent thread has handled everything queued before this call."""
    if request is None:
        return False
    try:
        return request.is_cancelled() is False  # True is cached and waited for nothing
    except Exception:  # no is_cancelled (a stand-in request), or the parent is gone: no proof
        return False


def stream_barrier_problem(pb_utils: Any) -> str | None:
    """A request in flight answers ``is_cancelled()`` (the barrier behind which drained streams are released); the
    warning a loading model logs where it does not (runtime/internals.py's ``load_problems`` asks)."""
    request = getattr(pb_utils, "InferenceRequest", None)
    if callable(getattr(request, "is_cancelled", None)):
        return None
    return (
        f"the decoupled BLS streams it drains are released {GRACE_S:.0f} s after they end instead of at once "
        "(requests have no is_cancelled() on this release, the barrier runtime.streams waits behind); streaming "
        "works as usual"
    )
