"""The immutable, validated description of a whole repository (DSL → IR → emit)."""

from .lower import lower
from .spec import (
    DynamicBatchingSpec,
    InstanceGroupSpec,
    ModelSpec,
    QueuePolicySpec,
    RateLimiterSpec,
    RepositorySpec,
    SequenceBatchingSpec,
    SequenceControlSpec,
    TensorSpec,
    VersionSpec,
    WarmupSpec,
)

__all__ = [
    "DynamicBatchingSpec",
    "InstanceGroupSpec",
    "ModelSpec",
    "QueuePolicySpec",
    "RateLimiterSpec",
    "RepositorySpec",
    "SequenceBatchingSpec",
    "SequenceControlSpec",
    "TensorSpec",
    "VersionSpec",
    "WarmupSpec",
    "lower",
]
