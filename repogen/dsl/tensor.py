"""``Tensor``: the declaration of one model input or output, with PyTriton's fields and order."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One input or output of a model.

    ``shape`` excludes the batch axis when the model batches (``max_batch_size > 0``); ``-1``
    marks a variable dimension. ``dtype`` may be a numpy dtype or scalar type, ``bytes`` /
    ``np.bytes_`` / ``object`` for BYTES, or a string such as ``"float32"``. Unnamed tensors get
    PyTriton's default names (``INPUT_1``, ``OUTPUT_1``, ...) when bound. ``labels`` (outputs
    only; a list of strings or a text file with one label per line) enables Triton's
    classification extension: clients ask for ``class_count`` and get "score:index:label".
    ``reshape`` is the shape the model sees (Triton's ``reshape``), e.g. ``shape=(1,)`` with
    ``reshape=()`` for a scalar per sample.
    """

    shape: tuple[int, ...]
    dtype: Any
    name: str | None = None
    optional: bool = False
    labels: Sequence[str] | str | os.PathLike[str] | None = None
    reshape: tuple[int, ...] | None = None
