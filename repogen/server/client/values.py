"""Values typed on the command line (``a=[[1,2]]``, ``text=hi``, ``x=@x.npy``) as the arrays a model declares.

``repogen infer`` and ``repogen perf`` take the datatype and shape from the model's metadata, so a user
writes values only; a missing batch dimension or a scalar for a ``[-1, 1]`` input is filled in. A value
that would change on the way is refused, never silently rounded: 1.5 for an INT64 input, 300 for a
UINT8 one, a float64 ``.npy`` for an FP32 input (numpy's "safe" casts only, for arrays from a file).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InferError, UsageError
from ...triton.dtypes import numpy_dtype
from ...triton.shapes import dims_match

__all__ = ["InferError", "parse_input", "parse_inputs", "sample_value", "to_array"]


def sample_value(datatype: str) -> Any:
    """A harmless value of ``datatype`` for generated example requests."""
    if datatype == "BYTES":
        return "hello"
    if datatype == "BOOL":
        return True
    if datatype.startswith("FP") or datatype == "BF16":
        return 1.0
    return 1


def parse_input(text: str) -> tuple[str, Any]:
    """``name=VALUE``: a JSON value (list, number, string), ``@file.npy`` (an ``ndarray``), or else a plain string."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise UsageError(f"--input {text!r} is not NAME=VALUE; expected e.g. a=[[1,2,3]], n=3, text=hello or x=@x.npy.")
    if raw.startswith("@"):
        path = Path(raw[1:]).expanduser()
        try:
            return name, np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InferError(f"--input {name}: cannot load {path} as a .npy array ({exc}).") from exc
    try:
        return name, json.loads(raw)
    except ValueError:
        return name, raw


def parse_inputs(texts: list[str]) -> dict[str, Any]:
    """Every ``--input``, each name once: a second ``-i text=...`` is a mistake, not a replacement."""
    parsed: dict[str, Any] = {}
    given: dict[str, str] = {}
    for text in texts:
        name, value = parse_input(text)
        if name in parsed:
            raise UsageError(
                f"input {name!r} is given twice (--input {given[name]} and --input {text}); pass each input once. "
                f'Several values go in one list: {name}=\'["a", "b"]\' (BYTES) or {name}=[[1,2]].'
            )
        parsed[name], given[name] = value, text
    return parsed


# --------------------------------------------------------------------------- conversion


def _fit_shape(name: str, array: np.ndarray, shape: list[int]) -> np.ndarray:
    if dims_match(array.shape, shape):
        return array
    if shape and shape[0] < 0 and dims_match(array.shape, shape[1:]):
        return array[np.newaxis]  # the batch dimension
    filled = [1 if d < 0 else d for d in shape]
    if array.size == math.prod(filled):
        return array.reshape(filled)
    if sum(d < 0 for d in shape) == 1 and array.size % math.prod(filled) == 0:
        return array.reshape([d if d >= 0 else -1 for d in shape])  # e.g. ["a", "b"] for [-1, 1]
    raise InferError(
        f"input {name!r} has shape {shape} (-1: any size), found a value of shape {list(array.shape)}; "
        "pass a nested list with matching dimensions."
    )


def _from_file(name: str, array: np.ndarray, datatype: str, dtype: np.dtype[Any]) -> np.ndarray:
    if array.dtype == dtype or np.can_cast(array.dtype, dtype, casting="safe"):
        return array.astype(dtype, copy=False)
    raise InferError(
        f"input {name!r} is {datatype} ({dtype.name}), found a {array.dtype.name} array in its .npy file; converting "
        f"it could change its values. Save it as {dtype.name}: np.save(path, x.astype(np.{dtype.name}))."
    )


def _from_json(name: str, value: Any, datatype: str, dtype: np.dtype[Any]) -> np.ndarray:
    """A JSON value as ``dtype``, refusing what the cast would change (fractions, range, overflow to inf)."""
    expects = f"input {name!r} expects {datatype} values"
    try:
        raw = np.asarray(value)
    except ValueError as exc:  # ragged lists
        raise InferError(f"{expects}, found {value!r} ({exc}); pass a rectangular nested list.") from exc
    # numbers, or ints no numpy integer dtype holds (beyond uint64, or beyond int64 with negatives): object
    numbers = raw.dtype.kind in "biuf" or (raw.dtype.kind == "O" and all(type(v) is int for v in raw.flat))
    if not numbers:
        raise InferError(f"{expects}, found {value!r}; pass numbers (a JSON value such as 3 or [[1,2]]).")
    if dtype.kind == "b":
        if raw.dtype.kind != "b" and not np.isin(raw, (0, 1)).all():
            raise InferError(f"{expects}, found {value!r}; pass true/false (or 1/0).")
        return raw.astype(dtype)
    if dtype.kind in "iu":
        return _whole_numbers(expects, name, value, datatype, dtype, raw.shape)
    with np.errstate(over="ignore"):
        array = raw.astype(dtype)
    if (np.isfinite(raw) & ~np.isfinite(array)).any():
        raise InferError(f"{expects}, found {value!r}, too large for {datatype} (it would become inf).")
    return array


def _whole_numbers(
    expects: str, name: str, value: Any, datatype: str, dtype: np.dtype[Any], shape: tuple[int, ...]
) -> np.ndarray:
    """Integers checked as Python's, exact at any size: numpy reads [0, 2**64-1] as float64, 2**64-1 rounded up."""
    items = list(np.asarray(value, dtype=object).flat)
    for item in items:
        if isinstance(item, float) and not (math.isfinite(item) and item.is_integer()):
            raise InferError(f"{expects}, found {item!r}, which is not a whole number; pass integers, e.g. {name}=1.")
    whole = [int(item) for item in items]
    info = np.iinfo(dtype)
    if whole and (min(whole) < info.min or max(whole) > info.max):
        raise InferError(f"{expects}, found {value!r}, outside {datatype}'s range {info.min}..{info.max}.")
    return np.array(whole, dtype=dtype).reshape(shape)


def to_array(name: str, value: Any, datatype: str, shape: list[int]) -> np.ndarray:
    """Convert a parsed value to the input's datatype and shape; an ``ndarray`` came from a ``.npy`` file."""
    if datatype == "BYTES":
        raw = np.asarray(value, dtype=object)
        flat = [v if isinstance(v, bytes) else str(v).encode() for v in raw.reshape(-1)]
        array = np.array(flat, dtype=object).reshape(raw.shape)
    else:
        dtype = numpy_dtype(datatype)
        if dtype is None:
            raise InferError(
                f"input {name!r} is {datatype}, which numpy has no dtype for; send it with tritonclient directly."
            )
        dtype = np.dtype(dtype)
        if isinstance(value, np.ndarray):
            array = _from_file(name, value, datatype, dtype)
        else:
            array = _from_json(name, value, datatype, dtype)
    return np.ascontiguousarray(_fit_shape(name, array, shape))
