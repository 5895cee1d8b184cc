"""A sequence batcher's control inputs, for a call of a sequence model in this process.

Triton's sequence batcher adds them to each request of a sequence (``SequenceBatcher``'s ``START``, ``END``,
``READY``, ``CORRID``); a call through a handle with ``.sequence(correlation_id, start=..., end=...)`` gets them here
the same way, so a stateful callable runs in process as it does served: START/END/READY int32 0/1 flags, CORRID the
id as uint64 (or BYTES, where declared so), with a batch axis of one row on a batching model.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import ModelSpec
from ..ir.spec import SequenceBatchingSpec
from ..runtime.errors import InferenceError


def control_inputs(spec: ModelSpec, sequence: tuple[int | str, bool, bool] | None) -> dict[str, np.ndarray]:
    """The control tensors a request of ``sequence`` (id, start, end) carries to ``spec``'s callable."""
    scheduler = spec.scheduler
    if not isinstance(scheduler, SequenceBatchingSpec):
        if sequence is not None:
            raise InferenceError(
                f"model '{spec.name}' was called with a sequence (correlation id {sequence[0]!r}), but it has no "
                "SequenceBatcher: give it ModelConfig(batcher=SequenceBatcher()), or call it without .sequence(...)"
            )
        return {}
    if sequence is None:  # the caller passes the controls itself, or the model reads none
        return {}
    correlation_id, start, end = sequence
    shape = (1, 1) if spec.max_batch_size > 0 else (1,)
    values: dict[str, Any] = {
        "CONTROL_SEQUENCE_START": np.full(shape, int(start), np.int32),
        "CONTROL_SEQUENCE_END": np.full(shape, int(end), np.int32),
        "CONTROL_SEQUENCE_READY": np.full(shape, 1, np.int32),
    }
    found = {}
    for control in scheduler.controls:
        if control.kind == "CONTROL_SEQUENCE_CORRID":
            if control.data_type == "TYPE_STRING":
                found[control.name] = np.full(shape, str(correlation_id).encode(), dtype=object)
            else:
                found[control.name] = np.full(shape, int(correlation_id), np.uint64)
        elif control.kind in values:
            found[control.name] = values[control.kind]
    return found
