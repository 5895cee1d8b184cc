"""What pickling an object takes with it, part by part: the one walk the build's diagnostics share.

cloudpickle pickles a function with the globals its code uses, its closure variables, defaults and attributes;
a method with its function and ``self``; a class pickled by value with its attributes; an instance with its
``__dict__`` and ``__slots__`` (or what ``__reduce_ex__`` gives). Walking those parts, labelled as the user
would name them (``attribute 'streamer'``), answers where inside a callable something lives: the part that
cannot be pickled (``unpicklable.py``), an object made anew or shared (``attribute_chains.py``), CUDA tensors
(``cuda_scan.py``).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from cloudpickle import cloudpickle as _cp

LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), range, np.ndarray, np.generic)
"""Values with nothing inside that a walk looks for."""

Parts = Iterator[tuple[str, Any]]


def parts(
    obj: Any, reduce: bool = True, modules: bool = True, instance: Callable[[Any], Parts | None] | None = None
) -> Parts:
    """(how the parent refers to it, the part) for what pickling ``obj`` pickles.

    Without ``reduce``, an instance gives its attributes only: ``__reduce_ex__`` can cost as much as pickling
    (an array's data), which a walk over payloads that pickled must not pay. Without ``modules``, a module gives
    nothing. ``instance(obj)``, where it answers, replaces an instance's parts (an ``nn.Module``'s, say).
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
            except ValueError:  # a cell not filled yet
                continue
        for index, value in enumerate(obj.__defaults__ or ()):
            yield f"default #{index + 1}", value
        yield from ((f"default {k!r}", v) for k, v in (obj.__kwdefaults__ or {}).items())
        yield from ((f"attribute {k!r}", v) for k, v in obj.__dict__.items())
    elif isinstance(obj, type):
        if not _cp._should_pickle_by_reference(obj):
            yield from ((f"class attribute {k!r}", v) for k, v in vars(obj).items() if k not in ("__dict__",))
    elif isinstance(obj, types.ModuleType):
        if modules:
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
        special = instance(obj) if instance is not None else None
        yield from special if special is not None else _instance_parts(obj, reduce)


def attributes(obj: Any, state: dict[str, Any] | None = None) -> Parts:
    """An instance's attributes: ``state`` (its ``__dict__`` unless given) and its ``__slots__``."""
    state = getattr(obj, "__dict__", None) if state is None else state
    if isinstance(state, dict):
        yield from ((f"attribute {k!r}", v) for k, v in state.items() if isinstance(k, str))
    for cls in type(obj).__mro__:
        names = cls.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                yield f"attribute {name!r}", getattr(obj, name)


def _instance_parts(obj: Any, reduce: bool) -> Parts:
    if not reduce:
        yield from attributes(obj)
        return
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        yield from ((f"attribute {k!r}", v) for k, v in state.items())
    try:
        reduced = obj.__reduce_ex__(4)
    except Exception:  # noqa: BLE001 - the object cannot even describe itself: it is the culprit
        return
    if isinstance(reduced, tuple) and len(reduced) > 1:
        yield from ((f"constructor argument #{i + 1}", v) for i, v in enumerate(reduced[1] or ()))
        if len(reduced) > 2 and reduced[2] is not None and not isinstance(state, dict):
            yield "state", reduced[2]
