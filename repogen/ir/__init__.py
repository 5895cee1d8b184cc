"""The immutable, validated description of a whole repository (DSL → IR → emit)."""

from .lower import lower
from .spec import DynamicBatchingSpec, ModelSpec, QueuePolicySpec, RepositorySpec, TensorSpec, VersionSpec

__all__ = [
    "DynamicBatchingSpec",
    "ModelSpec",
    "QueuePolicySpec",
    "RepositorySpec",
    "TensorSpec",
    "VersionSpec",
    "lower",
]
