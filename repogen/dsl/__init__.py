"""What users write: PyTriton-compatible declarations of tensors, configs and models."""

from .config import DynamicBatcher, ModelConfig, QueuePolicy, TimeoutAction
from .repository import ModelHandle, Repository
from .tensor import Tensor

__all__ = [
    "DynamicBatcher",
    "ModelConfig",
    "ModelHandle",
    "QueuePolicy",
    "Repository",
    "Tensor",
    "TimeoutAction",
]
