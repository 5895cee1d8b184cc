"""cloudpickle, made portable, deterministic and free of build-machine paths.

Out of the box cloudpickle (3.1.2) pickles code objects as bytecode of the building Python, writes
a fresh uuid4 for every class pickled by value, serializes set constants in string-hash order
(which follows PYTHONHASHSEED) and embeds absolute source paths (``co_filename``, ``__file__``).
:class:`PortablePickler` replaces each code object by a reference into a shipped source file (see
``shipped_sources.py``), so the server's Python compiles it; both picklers pin tracker ids, sort set
constants and make paths relative to the user's project (or to the ``sys.path`` entry a module
came from). :class:`DeterministicPickler` alone is ``--pin-python``: bytecode of this Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import cloudpickle
from cloudpickle import cloudpickle as _cp

from ..runtime import portable
from ..runtime.user_metrics import Metric
from . import cuda_tensors
from .classes_by_value import reduce_class
from .live_objects import Tracker
from .shipped_sources import SourceFile, SourceTable, imported_modules

# Protocol 4: numpy 2 arrays pickled with protocol 5 do not load under numpy 1.26.
PROTOCOL = 4
# Comprehensions are their own scope up to 3.11 and inlined from 3.12 (PEP 709): one qualname for all.
_INLINED_SCOPE = re.compile(r"<(?:listcomp|dictcomp|setcomp)>\.")
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


def relative_to(roots: Sequence[str]) -> Callable[[str], str]:
    """A file name made relative to the longest root containing it (else its base name)."""
    ordered = sorted({os.path.abspath(r) for r in roots if r}, key=len, reverse=True)

    def relative(filename: str) -> str:
        if not filename or filename.startswith("<"):
            return filename
        path = os.path.abspath(filename)
        for root in ordered:
            if path.startswith(root + os.sep):
                return os.path.relpath(path, root).replace(os.sep, "/")
        return os.path.basename(path)

    return relative


def search_roots(roots: Sequence[str]) -> list[str]:
    """The user's project first, then ``sys.path``: where relative names are taken from."""
    return [*roots, *sys.path]


class DeterministicPickler(cloudpickle.Pickler):
    def __init__(
        self,
        file: Any,
        roots: Sequence[str],
        replace: Callable[[Any], Any] | None = None,
        owners: Mapping[int, tuple[int, int]] | None = None,
    ):
        super().__init__(file, protocol=PROTOCOL)
        self._replace = replace  # returns a reduce tuple for objects to pickle as something else
        self._cuda = cuda_tensors.reducer(owners)  # CUDA tensors land on the unpickling instance's device
        self.relative = relative_to(roots)
        self.modules: dict[str, str] = {}  # modules the payload imports at unpickling time -> what needs them
        self.live = Tracker()  # what was made anew (``live_objects``), what two models may both hold
        self.metrics: dict[int, Metric] = {}  # the user's metrics the payload holds (runtime/user_metrics.py)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Metric):
            self.metrics.setdefault(id(obj), obj)
        if self._replace is not None:
            reduced = self._replace(obj)
            if reduced is not NotImplemented:
                return reduced
        if self._cuda is not None:
            reduced = self._cuda(obj)
            if reduced is not NotImplemented:
                return reduced
        reduced = self.live.reduce(obj)
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
                self.modules.setdefault(obj.__name__, f"module {obj.__name__}")
        elif isinstance(obj, types.BuiltinFunctionType):
            if isinstance(getattr(obj, "__module__", None), str):
                self.modules.setdefault(obj.__module__, f"{obj.__module__}.{obj.__qualname__}")
        elif isinstance(obj, (type, types.FunctionType)) and _cp._should_pickle_by_reference(obj):
            self.modules.setdefault(obj.__module__, f"{obj.__module__}.{obj.__qualname__}")

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


class PortablePickler(DeterministicPickler):
    """No bytecode: code objects become references into shipped sources, closures travel by name; modules and
    closure cells are rebuilt by the runtime's own helpers, so a payload of plain functions needs no cloudpickle
    in the server (classes pickled by value still do)."""

    def __init__(
        self,
        file: Any,
        roots: Sequence[str],
        replace: Callable[[Any], Any] | None,
        sources: SourceTable,
        owners: Mapping[int, tuple[int, int]] | None = None,
    ):
        super().__init__(file, roots, replace, owners)
        self._sources = sources
        self.shipped: dict[str, SourceFile] = {}  # by key
        self.imports: set[str] = set()  # absolute imports the shipped functions run when called

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is not types.CodeType:
            return None
        source, reference = self._sources.reference(obj)
        if reference[1] not in self.shipped:
            self.shipped[reference[1]] = source
        self.imports |= imported_modules(obj)
        return reference

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is types.ModuleType and _cp._should_pickle_by_reference(obj):  # the runtime's, not cloudpickle's
            self._note_module(obj)
            return portable.subimport, (obj.__name__,)
        if kind is types.CellType:
            try:
                return portable.make_cell, (obj.cell_contents,)
            except ValueError:  # a variable not assigned yet
                return portable.make_cell, ()
        if isinstance(obj, type) and not _cp._should_pickle_by_reference(obj) and obj not in _cp._BUILTIN_TYPE_NAMES:
            return reduce_class(obj)
        return super().reducer_override(obj)

    def _dynamic_function_reduce(self, func: types.FunctionType) -> Any:
        code, base_globals, _, _, _ = self._function_getnewargs(func)
        state, slots = _cp._function_getstate(func)
        slots["__globals__"] = {k: _canonical(v) for k, v in slots["__globals__"].items()}
        cells = slots["__closure__"]
        slots["__closure__"] = None if cells is None else dict(zip(code.co_freevars, cells, strict=True))
        slots["__qualname__"] = _INLINED_SCOPE.sub("", slots["__qualname__"])
        return portable.make_function, (code, base_globals), (state, slots), None, None, portable.set_function_state


@dataclasses.dataclass(frozen=True)
class Pickled:
    data: bytes
    modules: dict[str, str]
    """Modules unpickling imports, each with the first object that needs it."""
    sources: tuple[SourceFile, ...] = ()
    """Files the server compiles the code from (portable payloads), sorted by key."""
    imports: frozenset[str] = frozenset()
    """Absolute imports in the shipped functions' bodies, run when they are called."""
    made_anew: tuple[tuple[Any, str], ...] = ()
    """(object, how the server makes it) for each live object made anew in the server, in pickling order."""
    held: tuple[Any, ...] = ()
    """Instances of the user's classes and the objects made anew, in pickling order: what two models may share."""
    inner: frozenset[int] = frozenset()
    """ids of the objects made anew as part of another (a Condition's lock, an executor's initargs)."""
    metrics: tuple[Metric, ...] = ()
    """The user's metrics the payload holds, in pickling order."""


def pickler(
    buffer: io.BytesIO,
    roots: Sequence[str],
    replace: Callable[[Any], Any] | None,
    sources: SourceTable | None,
    owners: Mapping[int, tuple[int, int]] | None = None,
) -> DeterministicPickler:
    if sources is None:
        return DeterministicPickler(buffer, search_roots(roots), replace, owners)
    return PortablePickler(buffer, search_roots(roots), replace, sources, owners)


def dumps(
    obj: Any,
    roots: Sequence[str] = (),
    replace: Callable[[Any], Any] | None = None,
    sources: SourceTable | None = None,
    owners: Mapping[int, tuple[int, int]] | None = None,
) -> Pickled:
    """Pickle ``obj``: portable when given the build's ``sources``, else bytecode of this Python (pinned).

    Source paths under ``roots`` (then ``sys.path``) are stored relative to them. ``owners``: the CUDA tensors
    only one of a model's per-instance callables holds (``cuda_tensors.py``).
    """
    buffer = io.BytesIO()
    active = pickler(buffer, roots, replace, sources, owners)
    with _pinned_tracker_ids():
        active.dump(obj)
    tracker = active.live
    made_anew, held, inner = tuple(tracker.made_anew.values()), tuple(tracker.held.values()), frozenset(tracker.inner)
    modules = dict(sorted(active.modules.items()))
    metrics = tuple(active.metrics.values())
    if isinstance(active, PortablePickler):
        shipped = tuple(sorted(active.shipped.values(), key=lambda s: s.key))
        return Pickled(buffer.getvalue(), modules, shipped, frozenset(active.imports), made_anew, held, inner, metrics)
    return Pickled(buffer.getvalue(), modules, made_anew=made_anew, held=held, inner=inner, metrics=metrics)


def register_by_value(modules: Sequence[types.ModuleType]) -> None:
    """The user's own modules are not installed in the server: pickle them by value."""
    for module in modules:
        with contextlib.suppress(ValueError):  # already registered
            cloudpickle.register_pickle_by_value(module)
