"""repogen: compile Python inference callables into a static NVIDIA Triton model repository."""

from .build import BuildResult, build_app, build_repository
from .dsl import (
    DynamicBatcher,
    InstanceGroup,
    ModelConfig,
    ModelHandle,
    QueuePolicy,
    Repository,
    Tensor,
    TimeoutAction,
    VersionPolicy,
)
from .errors import BuildError
from .runtime import InferenceError, ModelContext, PyTritonUnrecoverableError, Request, batch, factory
from .version import __version__

__all__ = [
    "BuildError",
    "BuildResult",
    "DynamicBatcher",
    "InferenceError",
    "InstanceGroup",
    "ModelConfig",
    "ModelContext",
    "ModelHandle",
    "PyTritonUnrecoverableError",
    "QueuePolicy",
    "Repository",
    "Request",
    "Tensor",
    "TimeoutAction",
    "VersionPolicy",
    "__version__",
    "batch",
    "build_app",
    "build_repository",
    "factory",
]
