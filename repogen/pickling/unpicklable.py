"""Where, inside a callable, the object that cannot be pickled lives.

pickle reports only the type it failed on (``cannot pickle '_thread.lock' object``). Walking
the callable as cloudpickle would (the globals its code uses, closure variables, defaults,
attributes, containers: ``pickled_parts.py``) and pickling each part on its own finds the innermost part
that fails, and the path to it is what the user needs to see. ``attribute_chains.py`` walks the same parts (without
asking objects to reduce themselves) to name where a payload holds an object that pickled.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .pickled_parts import parts

_MAX_DEPTH = 32


def describe(obj: Any) -> str:
    if isinstance(obj, (types.FunctionType, type)):
        kind = "class" if isinstance(obj, type) else "function"
        code = getattr(obj, "__code__", None)
        where = f" at {code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}" if code else ""
        return f"{kind} {obj.__qualname__}{where}"
    cls = type(obj)
    return f"a {cls.__module__}.{cls.__qualname__} object" if cls.__module__ != "builtins" else f"a {cls.__name__}"


def locate(
    root: Any, label: str, pickles: Callable[[Any], None], stop: Callable[[Any], bool] | None = None
) -> tuple[list[str], Any]:
    """The path from ``root`` (called ``label``) to the innermost part that ``pickles`` cannot pickle, and that part.

    The walk ends early at a part ``stop`` accepts (a live object refused as a whole: a started thread, not the
    event inside it that says so).
    """
    path = [f"{label} ({describe(root)})"]
    current, seen = root, {id(root)}
    for _ in range(_MAX_DEPTH):
        if stop is not None and stop(current):
            break
        for name, part in parts(current):
            if id(part) in seen:
                continue
            seen.add(id(part))
            try:
                pickles(part)
            except Exception:  # noqa: BLE001 - any failure means the culprit is in there
                path.append(f"{name} ({describe(part)})")
                current = part
                break
        else:
            break
    return path, current
