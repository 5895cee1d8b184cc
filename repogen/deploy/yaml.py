"""A tiny, deterministic YAML emitter for Kubernetes manifests, and its inverse.

PyYAML is not a dependency of repogen, and manifests need only block mappings, block
sequences and scalars. Strings that YAML could read as anything but a string (``"8000"``,
``"yes"``, ``"24.10"``, ``"-x"``) are written JSON-quoted, which YAML reads back verbatim.
:func:`loads` parses exactly what :func:`dumps` writes, so tests can round-trip manifests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["dumps", "dumps_all", "loads", "loads_all"]

_PLAIN = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./=-]*(:[A-Za-z0-9_./=-]+)*$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T|m)$")  # "256Mi", "500m": never numbers in YAML
_RESERVED = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"})
_INT = re.compile(r"^-?[0-9]+$")
_FLOAT = re.compile(r"^-?[0-9]+\.[0-9]*([eE][-+]?[0-9]+)?$")


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if (_PLAIN.match(value) and value.lower() not in _RESERVED) or _QUANTITY.match(value):
            return value
        return json.dumps(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as YAML; use dict, list, str, int, float, bool")


def _lines(value: Any, indent: int) -> list[str]:
    """Block lines of a mapping or sequence at ``indent`` spaces."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"YAML mapping keys must be str, found {key!r}")
            head = f"{pad}{_scalar(key)}:"
            if isinstance(item, Mapping | list | tuple) and item:
                out.append(head)
                out.extend(_lines(item, indent + 2))
            else:
                out.append(f"{head} {_flow(item)}")
        return out
    for item in value:
        if isinstance(item, Mapping | list | tuple) and item:
            nested = _lines(item, indent + 2)
            out.append(f"{pad}- {nested[0].lstrip()}")
            out.extend(nested[1:])
        else:
            out.append(f"{pad}- {_flow(item)}")
    return out


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list | tuple):
        return "[]"
    return _scalar(value)


def dumps(document: Mapping[str, Any]) -> str:
    """One YAML document (block style, insertion order, two-space indents)."""
    return "\n".join(_lines(document, 0)) + "\n"


def dumps_all(documents: Iterable[Mapping[str, Any]]) -> str:
    """Several documents separated by ``---``."""
    return "---\n".join(dumps(d) for d in documents)


# --------------------------------------------------------------------------- inverse


def _parse_scalar(text: str) -> Any:
    if text.startswith('"'):
        return json.loads(text)
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return text


def _split_key(text: str) -> tuple[str, str]:
    """``key: rest`` → (key, rest); ``rest`` is empty when a block follows."""
    if text.startswith('"'):
        key, end = json.JSONDecoder().raw_decode(text)
        rest = text[end:]
    else:
        colon = text.find(": ") if ": " in text else len(text) - 1
        key, rest = text[:colon], text[colon:]
    if not rest.startswith(":"):
        raise ValueError(f"expected 'key: value', found {text!r}")
    return key, rest[1:].strip()


def _parse(lines: list[tuple[int, str]], i: int, indent: int) -> tuple[Any, int]:
    if lines[i][1].startswith("- ") or lines[i][1] == "-":
        seq: list[Any] = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
            rest = lines[i][1][1:].strip()
            if not rest:
                value, i = _parse(lines, i + 1, lines[i + 1][0])
            elif rest.startswith("{}") or rest.startswith("[]") or not _is_key(rest):
                value, i = _parse_scalar(rest), i + 1
            else:
                lines[i] = (indent + 2, rest)
                value, i = _parse(lines, i, indent + 2)
            seq.append(value)
        return seq, i
    mapping: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent and not lines[i][1].startswith("- "):
        key, rest = _split_key(lines[i][1])
        if rest:
            mapping[key], i = _parse_scalar(rest), i + 1
        else:
            mapping[key], i = _parse(lines, i + 1, lines[i + 1][0])
    return mapping, i


def _is_key(text: str) -> bool:
    if text.startswith('"'):
        _, end = json.JSONDecoder().raw_decode(text)
        return text[end:].startswith(":")
    return ": " in text or text.endswith(":")


def loads_all(text: str) -> list[Any]:
    """Parse documents written by :func:`dumps_all` (comments and blank lines are skipped)."""
    documents: list[Any] = []
    for chunk in re.split(r"^---$", text, flags=re.MULTILINE):
        lines = [
            (len(line) - len(line.lstrip(" ")), line.strip())
            for line in chunk.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if lines:
            value, end = _parse(lines, 0, lines[0][0])
            if end != len(lines):
                raise ValueError(f"unexpected indentation at {lines[end][1]!r}")
            documents.append(value)
    return documents


def loads(text: str) -> Any:
    """Parse a single document written by :func:`dumps`."""
    documents = loads_all(text)
    if len(documents) != 1:
        raise ValueError(f"expected one YAML document, found {len(documents)}")
    return documents[0]
