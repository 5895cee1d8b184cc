"""Proof that a portable payload carries no bytecode: read its pickle opcodes without loading it.

A code object can only enter a pickle through a constructor: ``types.CodeType`` (cloudpickle
reaches it as ``_builtin_type("CodeType")``), ``marshal.loads``, or ``compile``/``exec``/``eval``.
Scanning the opcodes for those references, and for bytecode-carrying cloudpickle helpers, is
enough to tell; nothing is unpickled, so a hostile payload cannot run.

    from repogen.testing.bytecode_scan import bytecode_in_repository
    assert bytecode_in_repository("model_repository") == {}
"""

from __future__ import annotations

import json
import pickletools
from pathlib import Path
from typing import Any

from repogen.runtime.contract import METADATA_FILE

__all__ = ["bytecode_in_pickle", "bytecode_in_repository"]

_FORBIDDEN = {
    ("types", "CodeType"): "types.CodeType",
    ("builtins", "compile"): "builtins.compile",
    ("builtins", "exec"): "builtins.exec",
    ("builtins", "eval"): "builtins.eval",
    ("cloudpickle.cloudpickle", "_make_function"): "a function rebuilt from pickled bytecode (cloudpickle)",
}
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}
_MEMO_OPS = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"}
_GET_OPS = {"GET", "BINGET", "LONG_BINGET"}
_OTHER = object()  # something pushed that is not a string


def bytecode_in_pickle(data: bytes) -> list[str]:
    """What in ``data`` would construct a code object (empty: none)."""
    problems: list[str] = []
    recent: list[object] = []  # values pushed lately: strings, or _OTHER
    memo: dict[int, object] = {}
    builtin_type = False  # the last global was cloudpickle's _builtin_type
    for op, arg, position in pickletools.genops(data):
        name = op.name
        if name in _MEMO_OPS:
            memo[len(memo) if name == "MEMOIZE" else int(str(arg))] = recent[-1] if recent else _OTHER
            continue
        if name in _STRING_OPS:
            value: object = arg
            if builtin_type and arg == "CodeType":
                problems.append(f"offset {position}: cloudpickle._builtin_type('CodeType')")
        elif name in _GET_OPS:
            value = memo.get(int(str(arg)), _OTHER)
        elif name in ("GLOBAL", "STACK_GLOBAL"):
            module, qualname = str(arg).split(" ", 1) if name == "GLOBAL" else (recent[-2], recent[-1])
            reference = (str(module), str(qualname))
            builtin_type = reference == ("cloudpickle.cloudpickle", "_builtin_type")
            if reference in _FORBIDDEN or reference[0] == "marshal":
                problems.append(f"offset {position}: {_FORBIDDEN.get(reference, '.'.join(reference))}")
            value = _OTHER
        elif op.stack_after:
            value = _OTHER
        else:
            continue
        recent = [*recent[-1:], value]
    return problems


def bytecode_in_repository(root: str | Path) -> dict[str, list[str]]:
    """Every portable payload under ``root`` (a repository, or any tree of them) that holds bytecode, or
    that cannot be read: a payload the gate cannot read is one it cannot vouch for.

    Payloads built with ``--pin-python`` (``"portable": false`` in ``model.json``) carry bytecode
    by design and are skipped, as are ``model.json`` files that are not a repogen sidecar (not a
    JSON object naming a ``payload``).
    """
    found = {}
    for metadata in sorted(Path(root).rglob(METADATA_FILE)):
        meta = _sidecar(metadata)
        if meta is None or not meta.get("portable"):
            continue
        payload = metadata.parent / str(meta["payload"].get("file", ""))
        try:
            problems = bytecode_in_pickle(payload.read_bytes())
        except (OSError, ValueError, TypeError, IndexError) as exc:  # missing, unreadable, not a whole pickle
            problems = [f"cannot read the payload {metadata.name} names: {type(exc).__name__}: {exc}"]
        if problems:
            found[str(payload)] = problems
    return found


def _sidecar(path: Path) -> dict[str, Any] | None:
    """A repogen sidecar's content, or None for a ``model.json`` that is not one (another tool's file)."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("payload"), dict):
        return None
    return meta
