"""repogen: compile Python inference callables into a static NVIDIA Triton model repository."""

from .build import BuildResult, build_app, build_repository
from .dsl import DynamicBatcher, ModelConfig, ModelHandle, QueuePolicy, Repository, Tensor, TimeoutAction
from .errors import BuildError
from .runtime import InferenceError, PyTritonUnrecoverableError, Request, batch
from .version import __version__

__all__ = [
    "BuildError",
    "BuildResult",
    "DynamicBatcher",
    "InferenceError",
    "ModelConfig",
    "ModelHandle",
    "PyTritonUnrecoverableError",
    "QueuePolicy",
    "Repository",
    "Request",
    "Tensor",
    "TimeoutAction",
    "__version__",
    "batch",
    "build_app",
    "build_repository",
]
