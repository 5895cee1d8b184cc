"""What users write: PyTriton-compatible declarations of tensors, configs and models."""

from .config import DynamicBatcher, InstanceGroup, ModelConfig, QueuePolicy, TimeoutAction, VersionPolicy
from .repository import ModelHandle, Repository
from .tensor import Tensor

__all__ = [
    "DynamicBatcher",
    "InstanceGroup",
    "ModelConfig",
    "ModelHandle",
    "QueuePolicy",
    "Repository",
    "Tensor",
    "TimeoutAction",
    "VersionPolicy",
]
