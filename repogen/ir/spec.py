"""Frozen dataclasses that every emitter reads; built only by ``repogen.ir.lower``."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    data_type: str  # Triton's enum name, e.g. "TYPE_FP32"
    dims: tuple[int, ...]
    optional: bool = False


@dataclasses.dataclass(frozen=True)
class QueuePolicySpec:
    timeout_action: str  # "REJECT" or "DELAY"
    default_timeout_microseconds: int
    allow_timeout_override: bool
    max_queue_size: int


@dataclasses.dataclass(frozen=True)
class DynamicBatchingSpec:
    max_queue_delay_microseconds: int
    preferred_batch_size: tuple[int, ...]
    preserve_ordering: bool
    priority_levels: int
    default_priority_level: int
    default_queue_policy: QueuePolicySpec | None
    priority_queue_policy: tuple[tuple[int, QueuePolicySpec], ...]


@dataclasses.dataclass(frozen=True)
class VersionSpec:
    version: int
    infer_funcs: tuple[Any, ...]  # one callable per model instance


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    max_batch_size: int
    # One field for Triton's `scheduling_choice` oneof, so two schedulers cannot be set at once.
    scheduler: DynamicBatchingSpec | None
    instance_count: int
    response_cache: bool
    decoupled: bool
    strict: bool
    parameters: tuple[tuple[str, str], ...]
    versions: tuple[VersionSpec, ...]


@dataclasses.dataclass(frozen=True)
class RepositorySpec:
    models: tuple[ModelSpec, ...]  # sorted by name

    def model(self, name: str) -> ModelSpec:
        for spec in self.models:
            if spec.name == name:
                return spec
        raise KeyError(name)
