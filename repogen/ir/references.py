"""Which model handles a served callable references: the models it calls through BLS.

The scan follows what pickling by value would carry: a function's globals and closure cells,
decorator layers (``__wrapped__``), a class's methods, and containers, staying inside the
user's own code (installed packages are pickled by reference and cannot hold the user's handles).
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterator
from typing import Any

from ..dsl.handle import ModelHandle

_MAX_NODES = 10_000


def referenced_handles(root: Any) -> list[ModelHandle]:
    found: dict[int, ModelHandle] = {}
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < _MAX_NODES:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, ModelHandle):
            found[id(obj)] = obj
            continue
        stack.extend(_children(obj))
    return list(found.values())


def _is_user_module(module: types.ModuleType) -> bool:
    """Modules the build pickles by value; installed ones cannot hold the user's handles."""
    name = module.__name__.split(".")[0]
    path = getattr(module, "__file__", None) or ""
    return (
        bool(path)
        and name not in sys.stdlib_module_names
        and name not in ("repogen", "numpy")
        and "site-packages" not in path
        and "dist-packages" not in path
    )


def _children(obj: Any) -> Iterator[Any]:
    if isinstance(obj, types.FunctionType):
        code_names = _code_names(obj.__code__)
        yield from (obj.__globals__[name] for name in code_names if name in obj.__globals__)
        yield from (cell.cell_contents for cell in obj.__closure__ or () if _has_contents(cell))
        yield from obj.__defaults__ or ()
        yield from (obj.__kwdefaults__ or {}).values()
        yield from obj.__dict__.values()
    elif isinstance(obj, types.MethodType):
        yield obj.__func__
        yield obj.__self__
    elif inspect.isclass(obj):
        if obj.__module__.split(".")[0] not in ("builtins", "numpy"):
            yield from (v for k, v in vars(obj).items() if not k.startswith("__") or k == "__call__" or k == "__init__")
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from obj
    elif isinstance(obj, dict):
        yield from obj.values()
    elif isinstance(obj, (staticmethod, classmethod)):
        yield obj.__func__
    elif isinstance(obj, types.ModuleType):
        if _is_user_module(obj):
            yield from vars(obj).values()
    elif hasattr(obj, "__wrapped__") or hasattr(obj, "__dict__"):
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None:
            yield wrapped
        if hasattr(obj, "__dict__"):
            yield from vars(obj).values()
            yield type(obj)


def _code_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


def _has_contents(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True
