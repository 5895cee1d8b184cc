"""``ModelConfig(max_concurrency=...)``: how many requests an instance of an async callable has in flight at once.

An ``async def`` callable (a function, a class's ``__call__``, under any decorator) or an async generator is served
concurrently by the runtime (``repogen.runtime.concurrency``), up to this bound per instance; a model with no async
callable serves one call at a time and takes no bound, and so does a sequence model (its requests must run in order:
the build records 0). A factory's callable is only known in the server: a bound given with one is recorded, and the
runtime applies it if the factory's callable turns out async.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dsl.config import ModelConfig, SequenceBatcher
from ..errors import BuildError
from ..runtime.contract import DEFAULT_MAX_CONCURRENCY
from ..runtime.instance import factory, is_async

__all__ = ["has_async_callable", "lower_concurrency"]


def has_async_callable(callables: Sequence[Any]) -> bool:
    return any(is_async(func) for func in callables)


def lower_concurrency(where: str, config: ModelConfig, callables: Sequence[Any]) -> int | None:
    """The bound the build records: the user's, or the default for an async callable; None for a model with none,
    0 for a sequence model's (one call at a time: a sequence's requests must run in order)."""
    value = config.max_concurrency
    found = has_async_callable(callables)
    if isinstance(config.batcher, SequenceBatcher):
        if value is not None:
            raise BuildError(
                f"{where}: max_concurrency={value!r} on a SequenceBatcher model: Triton hands a sequence's next "
                "request over once the one before has left execute, so calls in flight at once could run one "
                "sequence's requests out of order; a sequence model's async callable serves one call at a time: "
                "remove max_concurrency (or add instances)"
            )
        return 0 if found else None
    if value is None:
        return DEFAULT_MAX_CONCURRENCY if found else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BuildError(
            f"{where}: max_concurrency must be a positive int (requests one instance has in flight at once), "
            f"found {value!r}"
        )
    if not found and not any(isinstance(func, factory) for func in callables):
        raise BuildError(
            f"{where}: max_concurrency={value} bounds how many requests an async callable serves at once, but no "
            "callable bound to it is async (an `async def` function, or a class whose `__call__` is one, or an "
            "async generator); make the callable async, or remove max_concurrency"
        )
    return value
