"""Lowering schedulers: the dynamic batcher with its queue policies, and the sequence batcher.

A model has one scheduler at most: Triton's ``scheduling_choice`` oneof would silently drop the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dsl.config import DynamicBatcher, QueuePolicy, SequenceBatcher, TimeoutAction
from ..errors import BuildError
from ..triton.dtypes import triton_data_type
from .spec import DynamicBatchingSpec, IOSpec, QueuePolicySpec, SequenceBatchingSpec, SequenceControlSpec

_CONTROLS = (
    ("start", "CONTROL_SEQUENCE_START"),
    ("end", "CONTROL_SEQUENCE_END"),
    ("ready", "CONTROL_SEQUENCE_READY"),
    ("correlation_id", "CONTROL_SEQUENCE_CORRID"),
)


def lower_scheduler(
    where: str, batcher: Any, max_batch_size: int, inputs: Sequence[IOSpec]
) -> DynamicBatchingSpec | SequenceBatchingSpec | None:
    """One scheduler at most: Triton's ``scheduling_choice`` oneof would silently drop the other."""
    if isinstance(batcher, SequenceBatcher):
        return lower_sequence_batcher(where, batcher, max_batch_size, inputs)
    return _lower_batcher(where, batcher, max_batch_size) if max_batch_size else None


def _lower_batcher(where: str, batcher: DynamicBatcher | None, max_batch_size: int) -> DynamicBatchingSpec | None:
    if batcher is None:
        return None
    if not isinstance(batcher, DynamicBatcher):
        raise BuildError(
            f"{where}: batcher must be a repogen.DynamicBatcher or SequenceBatcher, found {type(batcher).__name__}"
        )
    preferred = tuple(batcher.preferred_batch_size or ())
    bad = [p for p in preferred if not isinstance(p, int) or not 1 <= p <= max_batch_size]
    if bad:
        raise BuildError(
            f"{where}: preferred_batch_size {list(preferred)} has {bad}; each must be between 1 and "
            f"max_batch_size={max_batch_size}"
        )
    if batcher.max_queue_delay_microseconds < 0:
        raise BuildError(
            f"{where}: max_queue_delay_microseconds must be >= 0, found {batcher.max_queue_delay_microseconds}"
        )
    levels = batcher.priority_levels
    if levels < 0 or (levels and not 1 <= batcher.default_priority_level <= levels):
        raise BuildError(
            f"{where}: default_priority_level={batcher.default_priority_level} must be between 1 and "
            f"priority_levels={levels} when priority levels are used"
        )
    per_level = []
    for level, policy in sorted((batcher.priority_queue_policy or {}).items()):
        if not 1 <= level <= levels:
            raise BuildError(
                f"{where}: priority_queue_policy has level {level}; levels run from 1 to priority_levels={levels}"
            )
        per_level.append((level, _lower_queue_policy(where, policy)))
    return DynamicBatchingSpec(
        max_queue_delay_microseconds=batcher.max_queue_delay_microseconds,
        preferred_batch_size=preferred,
        preserve_ordering=bool(batcher.preserve_ordering),
        priority_levels=levels,
        default_priority_level=batcher.default_priority_level,
        default_queue_policy=(
            _lower_queue_policy(where, batcher.default_queue_policy) if batcher.default_queue_policy else None
        ),
        priority_queue_policy=tuple(per_level),
    )


def _lower_queue_policy(where: str, policy: QueuePolicy) -> QueuePolicySpec:
    if not isinstance(policy, QueuePolicy):
        raise BuildError(f"{where}: queue policies must be repogen.QueuePolicy, found {type(policy).__name__}")
    action = policy.timeout_action
    action_name = action.value if isinstance(action, TimeoutAction) else str(action).upper()
    if action_name not in ("REJECT", "DELAY"):
        raise BuildError(f"{where}: timeout_action must be TimeoutAction.REJECT or DELAY, found {action!r}")
    if policy.default_timeout_microseconds < 0 or policy.max_queue_size < 0:
        raise BuildError(f"{where}: queue policy timeouts and max_queue_size must be >= 0")
    return QueuePolicySpec(
        timeout_action=action_name,
        default_timeout_microseconds=policy.default_timeout_microseconds,
        allow_timeout_override=bool(policy.allow_timeout_override),
        max_queue_size=policy.max_queue_size,
    )


def lower_sequence_batcher(
    where: str, batcher: SequenceBatcher, max_batch_size: int, inputs: Sequence[IOSpec]
) -> SequenceBatchingSpec:
    declared = {t.name for t in inputs}
    controls = []
    for field, kind in _CONTROLS:
        name = getattr(batcher, field)
        if name is None:
            continue
        if not isinstance(name, str) or not name:
            raise BuildError(f"{where}: SequenceBatcher.{field} must be an input name or None, found {name!r}")
        if name in declared:
            raise BuildError(
                f"{where}: SequenceBatcher.{field}='{name}' is also a declared input; Triton fills control inputs "
                "itself, so do not declare them (or rename the control)"
            )
        data_type = ""
        if kind == "CONTROL_SEQUENCE_CORRID":
            data_type = triton_data_type(batcher.correlation_id_dtype, f"{where}, correlation_id '{name}'")
            if data_type not in ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING"):
                raise BuildError(f"{where}: correlation_id_dtype must be an integer type or bytes, found {data_type}")
        controls.append(SequenceControlSpec(name=name, kind=kind, data_type=data_type))
    names = [c.name for c in controls]
    if len(set(names)) != len(names):
        raise BuildError(f"{where}: SequenceBatcher control inputs must have distinct names, found {names}")
    if batcher.strategy not in ("direct", "oldest"):
        raise BuildError(f"{where}: SequenceBatcher.strategy must be 'direct' or 'oldest', found {batcher.strategy!r}")
    if batcher.ready is None and batcher.strategy == "direct" and max_batch_size > 0:
        raise BuildError(
            f"{where}: the direct sequence strategy fills empty batch slots with null requests, and without a READY "
            "control the callable cannot tell them from real ones (tritonserver 2.51 crashed when such a callable "
            "raised); keep ready='READY' and skip rows where it is 0, use strategy='oldest', or set batching=False"
        )
    preferred = tuple(batcher.preferred_batch_size or ())
    if preferred and (batcher.strategy != "oldest" or any(not 1 <= p <= max(1, max_batch_size) for p in preferred)):
        raise BuildError(
            f"{where}: preferred_batch_size {list(preferred)} needs strategy='oldest' and sizes between 1 and "
            f"max_batch_size={max_batch_size}"
        )
    if batcher.max_sequence_idle_microseconds < 0 or batcher.max_queue_delay_microseconds < 0:
        raise BuildError(f"{where}: SequenceBatcher idle and queue delays must be >= 0")
    if batcher.max_candidate_sequences < 1:
        raise BuildError(f"{where}: max_candidate_sequences must be >= 1, found {batcher.max_candidate_sequences}")
    return SequenceBatchingSpec(
        max_sequence_idle_microseconds=batcher.max_sequence_idle_microseconds,
        controls=tuple(controls),
        strategy=batcher.strategy,
        max_queue_delay_microseconds=batcher.max_queue_delay_microseconds,
        max_candidate_sequences=batcher.max_candidate_sequences,
        preferred_batch_size=preferred,
    )
