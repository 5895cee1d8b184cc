"""PyTriton's decorators, with its semantics, for callables served by the runtime.

Two calling conventions meet here, as in PyTriton: "request" decorators (``sample``, ``batch``:
:mod:`.request_decorators`; ``group_by_keys``, ``fill_optionals``: :mod:`.optional_inputs`) receive the list of
requests as the last positional argument; "batch" decorators (``group_by_values``, ``pad_batch``;
:mod:`.batch_decorators`) sit below ``@batch`` and receive inputs as keyword arrays.
``first_value`` and ``triton_context`` (:mod:`.context_decorators`) work in both. What they share,
the decorator object that pickles by reference and binds like a function, is in
:mod:`.decorator_base`.

This module is where they are imported from; the runtime's package and ``repogen`` re-export them.
"""

from __future__ import annotations

from .batch_decorators import group_by_values, pad_batch
from .context_decorators import first_value, triton_context
from .decorator_base import TRITON_CONTEXT_FIELD_NAME
from .optional_inputs import fill_optionals, group_by_keys
from .padding import ConstantPadder
from .request_decorators import batch, sample

__all__ = [
    "TRITON_CONTEXT_FIELD_NAME",
    "ConstantPadder",
    "batch",
    "fill_optionals",
    "first_value",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "triton_context",
]
