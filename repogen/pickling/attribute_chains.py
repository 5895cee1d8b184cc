"""Where a payload holds an object: the chain of attributes from the bound callable to it.

The pickler knows which objects it made anew or saw (``live_objects.Tracker``) but not through what;
the user needs the chain (``infer_func -> attribute 'streamer' -> attribute 'text_queue'``) to know
which of their objects it means. A breadth-first walk over the parts pickling takes
(``pickled_parts.py``, without asking objects to reduce themselves) finds the shortest chain to each.
It stops at the objects it looks for (what they hold is theirs: a Condition's lock, an object inside
a shared one) and at ``LIMIT`` objects, so a payload holding a large model graph costs milliseconds.
"""

from __future__ import annotations

import collections
import dataclasses
import types
from collections.abc import Collection, Sequence
from typing import Any

from cloudpickle import cloudpickle as _cp

from .pickled_parts import LEAVES, parts

LIMIT = 20_000  # objects walked from one model's callables
MAX_DEPTH = 32


@dataclasses.dataclass(frozen=True)
class ChainsFound:
    chains: dict[int, str]
    """id of each target found -> the chain to it."""
    complete: bool
    """Everything reachable was walked: a target not found is only inside another target (or beyond pickling's
    own parts, a ``__getstate__``'s)."""


def _leaf(obj: Any) -> bool:
    if isinstance(obj, LEAVES):
        return True
    return isinstance(obj, types.ModuleType) and _cp._should_pickle_by_reference(obj)


def walk(roots: Sequence[tuple[str, Any]], targets: Collection[int]) -> ChainsFound:
    """The shortest chain from the ``(label, callable)`` roots to each object whose id is in ``targets``."""
    remaining = set(targets)
    chains: dict[int, str] = {}
    pending = collections.deque((label, obj, 0) for label, obj in roots)
    seen: set[int] = set()
    complete = True
    while pending and remaining:
        chain, obj, depth = pending.popleft()
        if id(obj) in seen:
            continue
        if len(seen) >= LIMIT:
            complete = False
            break
        seen.add(id(obj))
        if id(obj) in remaining:
            chains[id(obj)] = chain
            remaining.discard(id(obj))
            continue
        if depth >= MAX_DEPTH:
            complete = False
            continue
        for name, part in parts(obj, reduce=False):
            if id(part) not in seen and not _leaf(part):
                pending.append((f"{chain} -> {name}", part, depth + 1))
    return ChainsFound(chains, complete)


def not_traced(where: str) -> str:
    """What stands for a chain the walk did not find."""
    return f"{where} (where inside it, the walk of {LIMIT} objects did not find)"
