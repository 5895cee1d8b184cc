"""Which shipped source file holds each code object a payload needs.

A portable payload names code instead of carrying it: ``("code", file, name, first line,
ordinal)``. The build compiles each source file once, with its own Python, and finds the live code
object among the file's code objects with that name and first line; the server compiles the same
file and takes the same ordinal (see ``repogen/runtime/portable.py`` for why that is stable across
Python versions). A file comes from disk, or from ``linecache`` for code with no file on disk (a
Jupyter cell); code with no source at all cannot be shipped.
"""

from __future__ import annotations
import __future__

import dataclasses
import dis
import linecache
import os
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path

from ..errors import NoSourceError
from ..hashing import sha256_bytes
from ..runtime import portable

SOURCES_DIR = "sources"  # <version>/sources/<file>: the user's code, compiled by the server's Python
_RUNTIME_DIR = Path(portable.__file__).resolve().parent
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")
# Features not yet mandatory (``annotations``): the rest are no-ops, and nested_scopes's flag is CO_NESTED.
_FUTURES = {
    name: feature.compiler_flag
    for name in __future__.all_feature_names
    if not (feature := getattr(__future__, name)).mandatory or feature.mandatory > sys.version_info
}


@dataclasses.dataclass(frozen=True)
class SourceFile:
    key: str
    """The name the payload refers to and the server compiles it under (tracebacks show it)."""
    data: bytes
    origin: str
    """Where the build found it, for messages."""
    vendored: bool
    """Part of the vendored runtime, which every model version already ships under ``repogen/``."""
    index: portable.CodeIndex
    future: tuple[str, ...] = ()
    """``__future__`` features it was compiled with from outside (a notebook's earlier cells, exec's caller)."""

    @property
    def path(self) -> str:
        """Where it lies in the version directory."""
        return self.key if self.vendored else f"{SOURCES_DIR}/{self.key}"

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.data)


def _qualname(code: types.CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)


def imported_modules(code: types.CodeType) -> set[str]:
    """Absolute imports a function's body (and anything nested in it) executes when it runs."""
    found: set[str] = set()
    instructions = list(dis.get_instructions(code))
    for index, instruction in enumerate(instructions):
        if instruction.opname != "IMPORT_NAME" or index < 2:
            continue
        level = instructions[index - 2]  # LOAD_CONST level, LOAD_CONST fromlist, IMPORT_NAME
        if level.opname == "LOAD_CONST" and level.argval == 0 and instruction.argval:
            found.add(instruction.argval)
    for const in code.co_consts:
        if type(const) is types.CodeType:
            found |= imported_modules(const)
    return found


class SourceTable:
    """Build-wide: each source file read, checked and compiled once, whichever models use it.

    ``relative`` maps a file name to its path relative to the user's project (or the ``sys.path``
    entry it came from); ``check`` vets each user source once (grammar of the target Pythons).
    """

    def __init__(self, relative: Callable[[str], str], check: Callable[[SourceFile], None] | None = None):
        self._relative = relative
        self._check = check
        self._files: dict[str, SourceFile] = {}  # by co_filename
        self._keys: dict[str, str] = {}  # key -> co_filename, to keep keys unique

    def reference(self, code: types.CodeType) -> tuple[SourceFile, tuple[str, str, str, int, int]]:
        """The file holding ``code`` and the persistent id that names it."""
        source = self._source(code)
        candidates = source.index.get((code.co_name, code.co_firstlineno), [])
        for ordinal, candidate in enumerate(candidates):
            if candidate == code:
                return source, (portable.CODE_REFERENCE, source.key, code.co_name, code.co_firstlineno, ordinal)
        raise NoSourceError(
            f"{_qualname(code)} ({source.origin}:{code.co_firstlineno}) does not match its source file: the file "
            "changed after it was imported, or the code was generated or rewritten at run time. Rebuild from an "
            "unchanged file; for generated code, pass --pin-python (the payload then carries this Python's "
            "bytecode and loads only on Python {}.{})".format(*sys.version_info[:2])
        )

    def _source(self, code: types.CodeType) -> SourceFile:
        filename = code.co_filename
        source = self._files.get(filename)
        if source is None:
            source = self._files[filename] = self._read(code)
            if self._check is not None and not source.vendored:
                self._check(source)
        return source

    def _read(self, code: types.CodeType) -> SourceFile:
        filename = code.co_filename
        path = Path(filename)
        vendored = path.is_absolute() and path.resolve().is_relative_to(_RUNTIME_DIR)
        if path.is_absolute() and path.is_file():
            data = path.read_bytes()
        else:  # a notebook cell, or a file that is gone: linecache may still hold its text
            data = "".join(linecache.getlines(filename)).encode("utf-8")
        if not data:
            raise NoSourceError(
                f"{_qualname(code)} has no source to ship: it was compiled from {filename!r}, which is neither a "
                "file nor in linecache (exec/eval, or a REPL). Define it in a module or a notebook cell, or pass "
                "--pin-python (the payload then carries this Python's bytecode and loads only on Python "
                "{}.{})".format(*sys.version_info[:2])
            )
        key = self._key(filename, vendored)
        future = tuple(name for name, flag in _FUTURES.items() if code.co_flags & flag)
        try:
            module = compile(data, key, "exec", flags=portable.future_flags(future), dont_inherit=True)
        except SyntaxError as exc:
            raise NoSourceError(
                f"{filename}:{exc.lineno}: cannot compile the source of {_qualname(code)}: {exc.msg}"
            ) from None
        return SourceFile(key, data, filename, vendored, portable.code_index(module), future)

    def _key(self, filename: str, vendored: bool) -> str:
        if vendored:
            relative = Path(filename).resolve().relative_to(_RUNTIME_DIR).as_posix()
            return f"repogen/runtime/{relative}"
        if os.path.isabs(filename) and os.path.exists(filename):
            key = self._relative(filename)
        else:  # IPython: <ipython-input-3-1f2e>, or /tmp/ipykernel_811/2419.py
            key = f"cells/{_SAFE.sub('_', os.path.basename(filename).strip('<>')) or 'cell'}"
        if not key.endswith(".py"):
            key += ".py"
        stem, unique, number = key[:-3], key, 1
        while self._keys.setdefault(unique, filename) != filename:  # two files, one relative path
            number += 1
            unique = f"{stem}.{number}.py"
        return unique
