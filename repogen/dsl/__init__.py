"""What users write: PyTriton-compatible declarations of tensors, configs and models."""

from .config import (
    DynamicBatcher,
    InstanceGroup,
    ModelConfig,
    ModelWarmup,
    QueuePolicy,
    RateLimiter,
    SequenceBatcher,
    ServerOptions,
    TimeoutAction,
    VersionPolicy,
    Warmup,
    WarmupInput,
)
from .handle import ModelHandle
from .pytriton import Triton, TritonConfig, TritonLifecyclePolicy, TritonSecurityConfig
from .repository import Repository
from .tensor import Tensor

__all__ = [
    "DynamicBatcher",
    "InstanceGroup",
    "ModelConfig",
    "ModelHandle",
    "ModelWarmup",
    "QueuePolicy",
    "RateLimiter",
    "Repository",
    "SequenceBatcher",
    "ServerOptions",
    "Tensor",
    "TimeoutAction",
    "Triton",
    "TritonConfig",
    "TritonLifecyclePolicy",
    "TritonSecurityConfig",
    "VersionPolicy",
    "Warmup",
    "WarmupInput",
]
