"""Model configuration objects with PyTriton's names, fields and defaults."""

from __future__ import annotations

import dataclasses
import enum


class TimeoutAction(enum.Enum):
    """What the queue does with a request whose timeout expired."""

    REJECT = "REJECT"
    DELAY = "DELAY"


@dataclasses.dataclass(frozen=True)
class QueuePolicy:
    """Queue limits and timeouts of the dynamic batcher (PyTriton's ``QueuePolicy``)."""

    timeout_action: TimeoutAction = TimeoutAction.REJECT
    default_timeout_microseconds: int = 0
    allow_timeout_override: bool = False
    max_queue_size: int = 0


@dataclasses.dataclass(frozen=True)
class DynamicBatcher:
    """Triton's dynamic batcher settings (PyTriton's ``DynamicBatcher``)."""

    max_queue_delay_microseconds: int = 0
    preferred_batch_size: list[int] | tuple[int, ...] | None = None
    preserve_ordering: bool = False
    priority_levels: int = 0
    default_priority_level: int = 0
    default_queue_policy: QueuePolicy | None = None
    priority_queue_policy: dict[int, QueuePolicy] | None = None


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """How Triton schedules a model (PyTriton's ``ModelConfig`` plus Triton-only extras).

    ``batching=False`` (or ``max_batch_size=0``) makes a model that sees each request's tensors
    exactly as sent, with no batch axis and no dynamic batcher.
    """

    batching: bool = True
    max_batch_size: int = 4
    batcher: DynamicBatcher | None = dataclasses.field(default_factory=DynamicBatcher)
    response_cache: bool = False
    decoupled: bool = False
    parameters: dict[str, str] | None = None
