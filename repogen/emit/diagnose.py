"""Where, inside a callable, the object that cannot be pickled lives.

pickle reports only the type it failed on (``cannot pickle '_thread.lock' object``). Walking
the callable as cloudpickle would (the globals its code uses, closure variables, defaults,
attributes, containers) and pickling each part on its own finds the innermost part that fails,
and the path to it is what the user needs to see. ``reach.py`` walks the same parts (without asking
objects to reduce themselves) to name where a payload holds an object that pickled.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

from cloudpickle import cloudpickle as _cp

_MAX_DEPTH = 32


def parts(obj: Any, reduce: bool = True) -> Iterator[tuple[str, Any]]:
    """(how the parent refers to it, the part) for what pickling ``obj`` pickles.

    Without ``reduce``, an instance gives its attributes only: ``__reduce_ex__`` can cost as much as pickling
    (an array's data), which a walk over payloads that pickled must not pay.
    """
    if isinstance(obj, types.FunctionType):
        if _cp._should_pickle_by_reference(obj):
            return
        for name in sorted(_cp._extract_code_globals(obj.__code__)):
            if name in obj.__globals__:
                yield f"global {name!r}", obj.__globals__[name]
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or (), strict=False):
            try:
                yield f"closure variable {name!r}", cell.cell_contents
            except ValueError:
                continue
        for index, value in enumerate(obj.__defaults__ or ()):
            yield f"default #{index + 1}", value
        yield from ((f"default {k!r}", v) for k, v in (obj.__kwdefaults__ or {}).items())
        yield from ((f"attribute {k!r}", v) for k, v in obj.__dict__.items())
    elif isinstance(obj, type):
        if not _cp._should_pickle_by_reference(obj):
            yield from ((f"class attribute {k!r}", v) for k, v in vars(obj).items() if k not in ("__dict__",))
    elif isinstance(obj, types.ModuleType):
        yield from ((f"module attribute {k!r}", v) for k, v in vars(obj).items() if not k.startswith("__"))
    elif isinstance(obj, dict):
        yield from ((f"[{k!r}]", v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))
    elif isinstance(obj, functools.partial):
        yield "partial function", obj.func
        yield from ((f"partial argument #{i + 1}", v) for i, v in enumerate(obj.args))
        yield from ((f"partial argument {k!r}", v) for k, v in obj.keywords.items())
    elif isinstance(obj, types.MethodType):
        yield "method function", obj.__func__
        yield "method self", obj.__self__
    else:
        yield from _instance_parts(obj, reduce)


def _instance_parts(obj: Any, reduce: bool) -> Iterator[tuple[str, Any]]:
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        yield from ((f"attribute {k!r}", v) for k, v in attributes.items())
    if not reduce:
        yield from _slots(obj)
        return
    try:
        reduced = obj.__reduce_ex__(4)
    except Exception:  # noqa: BLE001 - the object cannot even describe itself: it is the culprit
        return
    if isinstance(reduced, tuple) and len(reduced) > 1:
        yield from ((f"constructor argument #{i + 1}", v) for i, v in enumerate(reduced[1] or ()))
        if len(reduced) > 2 and reduced[2] is not None and not isinstance(attributes, dict):
            yield "state", reduced[2]


def _slots(obj: Any) -> Iterator[tuple[str, Any]]:
    """The attributes ``__slots__`` hold (what ``__reduce_ex__`` would give as state), without reducing."""
    for cls in type(obj).__mro__:
        names = cls.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                yield f"attribute {name!r}", getattr(obj, name)


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
