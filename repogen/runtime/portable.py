"""Rebuilding the user's functions from shipped source, with the server's own Python.

A portable payload holds no bytecode: the code of each function travels as a reference
``("code", file, name, first line, ordinal)`` to a source file shipped beside it, and the stub's
Python compiles that file here. CPython 3.10-3.13 compile one file into the same code objects in
the same pre-order, except that list, dict and set comprehensions are inlined from 3.12 (PEP 709):
their code objects are never referenced, so they are skipped when counting. Functions are then
rebuilt with their captured globals, defaults and closure cells, the cells matched by name.
Namedtuples and dataclasses pickled by value are rebuilt by runtime/portable_classes.py.
"""

from __future__ import annotations
import __future__

import linecache
import os
import pickle
import sys
import types
from collections.abc import Mapping
from typing import Any, BinaryIO

from .contract import verified_bytes
from .errors import PayloadError

CODE_REFERENCE = "code"  # first item of a persistent id that names a code object
INLINED = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>"})

CodeIndex = dict[tuple[str, int], list[types.CodeType]]


def code_index(module: types.CodeType) -> CodeIndex:
    """(name, first line) → the code objects compiled from one file, in pre-order."""
    index: CodeIndex = {}

    def visit(code: types.CodeType) -> None:
        for const in code.co_consts:
            if type(const) is types.CodeType:
                if const.co_name not in INLINED:
                    index.setdefault((const.co_name, const.co_firstlineno), []).append(const)
                visit(const)

    visit(module)
    return index


def future_flags(names: Any) -> int:
    """Compiler flags of ``__future__`` features by name; a name this Python does not know adds nothing."""
    flags = 0
    for name in names or ():
        feature = getattr(__future__, str(name), None)
        flags |= getattr(feature, "compiler_flag", 0)
    return flags


def confined(version_dir: str, relative: str, what: str) -> str:
    """``relative`` under ``version_dir``; a path that could leave it is refused."""
    parts = relative.split("/")
    if not relative or relative.startswith("/") or "\\" in relative or any(p in ("", ".", "..") for p in parts):
        raise PayloadError(
            f"{what} names {relative!r}, which is not a relative path inside {version_dir}; refusing to load it. "
            "Rebuild the repository with `repogen build`"
        )
    return os.path.join(version_dir, *parts)


class Sources:
    """The source files a payload's code comes from, each verified against its recorded sha256."""

    def __init__(self, model: str, version_dir: str, listed: Mapping[str, Any], listing: str):
        self._model = model
        self._version_dir = version_dir
        self._listed = listed
        self._listing = listing  # the file that lists them, for messages
        self._indexes: dict[str, CodeIndex] = {}

    def code(self, key: str, name: str, line: int, ordinal: int) -> types.CodeType:
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = self._compile(key)
        candidates = index.get((name, line), ())
        if ordinal >= len(candidates):
            raise PayloadError(
                f"model '{self._model}': the payload refers to {name} at {key}:{line} (#{ordinal + 1} there), but "
                f"the shipped source has {len(candidates)} such code object(s); the payload and its source disagree. "
                "Rebuild the repository with `repogen build`"
            )
        return candidates[ordinal]

    def _compile(self, key: str) -> CodeIndex:
        entry = self._listed.get(key)
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) or not entry.get("sha256"):
            raise PayloadError(
                f"model '{self._model}': the payload needs source {key!r}, which {self._listing} does not list "
                "with a file and sha256; rebuild the repository with `repogen build`"
            )
        path = confined(self._version_dir, entry["file"], self._listing)
        data = verified_bytes(
            path,
            entry["sha256"],
            doing="compile",
            recorded=f"recorded by the build in {self._listing}",
            missing=f"model '{self._model}': source {path} is missing, but {self._listing} lists it; rebuild the "
            "repository (or restore the file)",
            model=f"model '{self._model}': ",
        )
        try:
            module = compile(data, key, "exec", flags=future_flags(entry.get("future")), dont_inherit=True)
        except SyntaxError as exc:
            serving = "{}.{}".format(*sys.version_info[:2])
            raise PayloadError(
                f"model '{self._model}': {key}:{exc.lineno}: {exc.msg} — this server's Python {serving} cannot "
                f"compile the shipped source. Rebuild with `repogen build --triton-release <this release>`, which "
                "checks every source against the serving Python's grammar, and rewrite what it names"
            ) from None
        text = data.decode("utf-8", errors="replace")
        linecache.cache[key] = (len(text), None, text.splitlines(keepends=True), key)  # tracebacks show the code
        return code_index(module)


class PayloadUnpickler(pickle.Unpickler):
    """Resolves code references against the shipped sources; any other persistent id is refused."""

    def __init__(self, file: BinaryIO, sources: Sources):
        super().__init__(file)
        self._sources = sources

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is tuple and len(pid) == 5 and pid[0] == CODE_REFERENCE:
            return self._sources.code(*pid[1:])
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r} in a repogen payload; rebuild the repository")


def make_function(code: types.CodeType, base_globals: dict[str, Any]) -> types.FunctionType:
    """A function skeleton: empty cells for this Python's free variables, filled by :func:`set_function_state`."""
    base_globals["__builtins__"] = __builtins__
    closure = tuple(types.CellType() for _ in code.co_freevars) if code.co_freevars else None
    return types.FunctionType(code, base_globals, None, None, closure)


def subimport(name: str) -> types.ModuleType:
    """A module a payload refers to by name (a function's ``np``), imported here: cloudpickle's ``subimport``,
    so that a payload of plain functions needs no cloudpickle in the server."""
    __import__(name)
    return sys.modules[name]


def make_cell(*contents: Any) -> types.CellType:
    """A closure cell, empty or holding ``contents[0]``: cloudpickle's ``_make_cell`` / ``_make_empty_cell``."""
    return types.CellType(*contents)


def set_function_state(func: types.FunctionType, state: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """cloudpickle's function state, with closure cells given by variable name rather than position."""
    attributes, slots = state
    func.__dict__.update(attributes)
    func.__globals__.update(slots.pop("__globals__"))
    func.__globals__["__builtins__"] = __builtins__
    cells = slots.pop("__closure__")
    slots.pop("_cloudpickle_submodules", None)  # unpickling them imported them: that was their purpose
    if cells:
        names = func.__code__.co_freevars
        for name, cell in cells.items():
            if name not in names:
                raise PayloadError(
                    f"{func.__code__.co_filename}:{func.__code__.co_firstlineno}: {slots.get('__qualname__')} closes "
                    f"over {name!r}, but compiled by this Python it closes over {list(names)}; rebuild the repository"
                )
            try:
                value = cell.cell_contents
            except ValueError:  # a variable not assigned yet when the build pickled it
                continue
            func.__closure__[names.index(name)].cell_contents = value  # type: ignore[index]
    for name, value in slots.items():
        setattr(func, name, value)
