"""``Tensor``: the declaration of one model input or output, with PyTriton's fields and order."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One input or output of a model.

    ``shape`` excludes the batch axis when the model batches (``max_batch_size > 0``); ``-1``
    marks a variable dimension. ``dtype`` may be a numpy dtype or scalar type, ``bytes`` /
    ``np.bytes_`` / ``object`` for BYTES, or a string such as ``"float32"``. Unnamed tensors get
    PyTriton's default names (``INPUT_1``, ``OUTPUT_1``, ...) when bound.
    """

    shape: tuple[int, ...]
    dtype: Any
    name: str | None = None
    optional: bool = False
