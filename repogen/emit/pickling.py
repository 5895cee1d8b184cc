"""cloudpickle, made deterministic and free of build-machine paths.

Out of the box cloudpickle (3.1.2) writes a fresh uuid4 for every class pickled by value,
serializes set constants in string-hash order (which follows PYTHONHASHSEED) and embeds absolute
source paths (``co_filename``, ``__file__``). Golden files and reproducible builds need none of
that, so this pickler pins tracker ids, sorts set constants and makes paths relative to the
user's project (or to the ``sys.path`` entry a module came from).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import cloudpickle
from cloudpickle import cloudpickle as _cp

# Protocol 4: numpy 2 arrays pickled with protocol 5 do not load under numpy 1.26.
PROTOCOL = 4
_MODULE_PATH_KEYS = ("__builtins__", "__file__", "__cached__", "__spec__", "__loader__")
_TRACKER_LOCK = threading.Lock()


def _sort_key(item: Any) -> tuple[str, str]:
    return type(item).__qualname__, repr(item)


class _Sorted:
    """Stands in for a set or frozenset while pickling; unpickles as the real thing."""

    def __init__(self, kind: type, items: Any):
        self.kind = kind
        self.items = sorted(items, key=_sort_key)

    def __reduce__(self) -> tuple[Any, ...]:
        return self.kind, (self.items,)


def _canonical(value: Any) -> Any:
    kind = type(value)
    return _Sorted(kind, value) if kind in (set, frozenset) else value


def _deterministic_tracker_id(class_def: type) -> str:
    name = f"{class_def.__module__}.{class_def.__qualname__}"
    return hashlib.sha256(name.encode()).hexdigest()[:32]


@contextlib.contextmanager
def _pinned_tracker_ids() -> Iterator[None]:
    with _TRACKER_LOCK:
        original = _cp._get_or_create_tracker_id
        _cp._get_or_create_tracker_id = _deterministic_tracker_id
        try:
            yield
        finally:
            _cp._get_or_create_tracker_id = original


class DeterministicPickler(cloudpickle.Pickler):
    def __init__(self, file: Any, roots: Sequence[str], replace: Callable[[Any], Any] | None = None):
        super().__init__(file, protocol=PROTOCOL)
        self._replace = replace  # returns a reduce tuple for objects to pickle as something else
        self._roots = sorted({os.path.abspath(r) for r in roots if r}, key=len, reverse=True)
        self.modules: set[str] = set()  # modules the payload imports at unpickling time

    def relative(self, filename: str) -> str:
        if not filename or filename.startswith("<"):
            return filename
        path = os.path.abspath(filename)
        for root in self._roots:
            if path.startswith(root + os.sep):
                return os.path.relpath(path, root).replace(os.sep, "/")
        return os.path.basename(path)

    def reducer_override(self, obj: Any) -> Any:
        if self._replace is not None:
            reduced = self._replace(obj)
            if reduced is not NotImplemented:
                return reduced
        self._note_module(obj)
        if type(obj) is types.CodeType:
            consts = tuple(_canonical(c) for c in obj.co_consts)
            return _cp._code_reduce(obj.replace(co_filename=self.relative(obj.co_filename), co_consts=consts))
        if type(obj) is types.ModuleType and not _cp._should_pickle_by_reference(obj):
            state = {k: _canonical(v) for k, v in obj.__dict__.items() if k not in _MODULE_PATH_KEYS}
            return _cp.dynamic_subimport, (obj.__name__, state)
        return super().reducer_override(obj)

    def _note_module(self, obj: Any) -> None:
        if isinstance(obj, types.ModuleType):
            if _cp._should_pickle_by_reference(obj):
                self.modules.add(obj.__name__)
        elif isinstance(obj, types.BuiltinFunctionType):
            if isinstance(getattr(obj, "__module__", None), str):
                self.modules.add(obj.__module__)
        elif isinstance(obj, (type, types.FunctionType)) and _cp._should_pickle_by_reference(obj):
            self.modules.add(obj.__module__)

    def _function_getnewargs(self, func: types.FunctionType) -> Any:
        code, base_globals, name, defaults, closure = super()._function_getnewargs(func)
        if isinstance(base_globals.get("__file__"), str):
            base_globals["__file__"] = self.relative(base_globals["__file__"])
        return code, base_globals, name, defaults, closure

    def _dynamic_function_reduce(self, func: types.FunctionType) -> Any:
        reduced = super()._dynamic_function_reduce(func)
        state, slotstate = reduced[2]
        slotstate["__globals__"] = {k: _canonical(v) for k, v in slotstate["__globals__"].items()}
        return reduced


def dumps(obj: Any, roots: Sequence[str] = (), replace: Callable[[Any], Any] | None = None) -> tuple[bytes, list[str]]:
    """Pickle ``obj``; return the bytes and the modules that unpickling will import.

    Source paths under ``roots`` (then ``sys.path``) are stored relative to them.
    """
    buffer = io.BytesIO()
    pickler = DeterministicPickler(buffer, [*roots, *sys.path], replace)
    with _pinned_tracker_ids():
        pickler.dump(obj)
    return buffer.getvalue(), sorted(pickler.modules)


def register_by_value(modules: Sequence[types.ModuleType]) -> None:
    """The user's own modules are not installed in the server: pickle them by value."""
    for module in modules:
        with contextlib.suppress(ValueError):  # already registered
            cloudpickle.register_pickle_by_value(module)
