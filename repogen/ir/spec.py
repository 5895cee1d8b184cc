"""Frozen dataclasses that every emitter reads; built only by ``repogen.ir.lower``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    data_type: str  # Triton's enum name, e.g. "TYPE_FP32"
    dims: tuple[int, ...]
    optional: bool = False
    labels: tuple[str, ...] | None = None  # classification labels of an output


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
class InstanceGroupSpec:
    name: str
    kind: str  # "KIND_CPU" or "KIND_GPU"
    count: int
    gpus: tuple[int, ...]

    @property
    def instances(self) -> int:
        return self.count * max(1, len(self.gpus))


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
    instance_groups: tuple[InstanceGroupSpec, ...]
    version_policy: tuple[str, tuple[int, ...]] | None  # ("latest" | "all" | "specific", numbers)
    response_cache: bool
    decoupled: bool
    strict: bool
    parameters: tuple[tuple[str, str], ...]
    versions: tuple[VersionSpec, ...]
    files: tuple[tuple[str, Path], ...] = ()  # (name under <version>/files/, source path)


@dataclasses.dataclass(frozen=True)
class RepositorySpec:
    models: tuple[ModelSpec, ...]  # sorted by name

    def model(self, name: str) -> ModelSpec:
        for spec in self.models:
            if spec.name == name:
                return spec
        raise KeyError(name)
