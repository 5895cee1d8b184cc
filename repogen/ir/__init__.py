"""The immutable, validated description of a whole repository (DSL → IR → emit)."""

from .lower import lower
from .spec import (
    ClientSpec,
    DynamicBatchingSpec,
    EnsembleSpec,
    InstanceGroupSpec,
    IOSpec,
    ModelSpec,
    QueuePolicySpec,
    RateLimiterSpec,
    RepositorySpec,
    SequenceBatchingSpec,
    SequenceControlSpec,
    StepSpec,
    VersionSpec,
    WarmupSpec,
)

__all__ = [
    "ClientSpec",
    "DynamicBatchingSpec",
    "EnsembleSpec",
    "InstanceGroupSpec",
    "ModelSpec",
    "QueuePolicySpec",
    "RateLimiterSpec",
    "RepositorySpec",
    "SequenceBatchingSpec",
    "SequenceControlSpec",
    "StepSpec",
    "IOSpec",
    "VersionSpec",
    "WarmupSpec",
    "lower",
]
