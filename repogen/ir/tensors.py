"""Lowering declared tensors: names, dtypes, shapes, labels and reshapes."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..dsl.config import ModelConfig
from ..dsl.tensor import Tensor
from ..errors import BuildError
from ..triton.dtypes import triton_data_type
from .spec import IOSpec

# A tensor name travels in URLs and protobuf strings.
TENSOR_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/\-]{0,127}$")


def max_batch_size(where: str, config: ModelConfig) -> int:
    if not config.batching:
        return 0
    size = config.max_batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise BuildError(f"{where}: max_batch_size must be an integer >= 0, found {size!r}")
    return size


def lower_tensors(where: str, kind: str, tensors: Sequence[Tensor], allow_optional: bool = True) -> tuple[IOSpec, ...]:
    if kind == "output" and not tensors:
        raise BuildError(f"{where}: declares no outputs; a Triton model needs at least one output Tensor")
    specs = []
    seen: set[str] = set()
    for index, tensor in enumerate(tensors, start=1):
        if not isinstance(tensor, Tensor):
            raise BuildError(f"{where}: {kind} #{index} is a {type(tensor).__name__}; declare it with repogen.Tensor")
        name = tensor.name if tensor.name is not None else f"{kind.upper()}_{index}"
        label = f"{where}, {kind} '{name}'"
        if not isinstance(name, str) or not TENSOR_NAME.match(name):
            raise BuildError(
                f"{where}: {kind} name {name!r} is invalid; expected letters, digits and '_', '.', ':', '/', "
                "'-' (at most 128 characters)"
            )
        if name in seen:
            raise BuildError(f"{where}: {kind} '{name}' is declared twice; give each {kind} a unique name")
        seen.add(name)
        if tensor.optional and not allow_optional:
            raise BuildError(f"{label}: outputs cannot be optional; only inputs may set optional=True")
        if tensor.labels is not None and kind != "output":
            raise BuildError(f"{label}: labels belong to outputs (Triton's classification extension), not inputs")
        specs.append(
            IOSpec(
                name=name,
                data_type=triton_data_type(tensor.dtype, label),
                dims=_lower_shape(label, tensor.shape),
                optional=bool(tensor.optional),
                labels=_lower_labels(label, tensor.labels),
                reshape=_lower_reshape(label, tensor.reshape),
            )
        )
    return tuple(specs)


def _lower_shape(label: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        dims = tuple(int(d) for d in shape)
        exact = all(int(d) == d and not isinstance(d, bool) for d in shape)
    except (TypeError, ValueError):
        dims, exact = (), False
    if not exact or not dims or any(d == 0 or d < -1 for d in dims):
        raise BuildError(
            f"{label}: shape must be a non-empty tuple of positive ints or -1 (variable), found {shape!r}; "
            "leave out the batch axis when the model batches, and use (1,) for a scalar per sample"
        )
    return dims


def _lower_labels(label: str, labels: Any) -> tuple[str, ...] | None:
    if labels is None:
        return None
    if isinstance(labels, (str, os.PathLike)):
        path = Path(labels)
        if not path.is_file():
            raise BuildError(f"{label}: labels file {path} does not exist; pass a list of labels or an existing file")
        labels = path.read_text(encoding="utf-8").splitlines()
    items = tuple(labels)
    if not items or not all(isinstance(item, str) and "\n" not in item for item in items):
        raise BuildError(f"{label}: labels must be a non-empty list of single-line strings, found {labels!r}")
    return items


def _lower_reshape(label: str, reshape: Any) -> tuple[int, ...] | None:
    if reshape is None:
        return None
    try:
        dims = tuple(int(d) for d in reshape)
    except TypeError:
        dims = (0,)
    if any(d == 0 or d < -1 for d in dims):
        raise BuildError(f"{label}: reshape must be a tuple of positive ints or -1 (may be empty), found {reshape!r}")
    return dims
