"""repogen: compile Python inference callables into a static NVIDIA Triton model repository.

``import repogen`` in a user's app loads the declarations and the runtime's decorators (numpy,
nothing else): the compiler (protobuf, cloudpickle) loads when a build starts, the in-process
runner when ``models.local()`` first runs a model, the build and the server when ``Triton.run()`` starts.
"""

from typing import Any

from .dsl import (
    DynamicBatcher,
    InstanceGroup,
    ModelConfig,
    ModelHandle,
    ModelWarmup,
    QueuePolicy,
    RateLimiter,
    Repository,
    SequenceBatcher,
    ServerOptions,
    Tensor,
    TimeoutAction,
    Triton,
    TritonConfig,
    TritonLifecyclePolicy,
    TritonSecurityConfig,
    VersionPolicy,
    Warmup,
    WarmupInput,
)
from .dsl.pytriton import set_server_runner
from .dsl.repository import set_local_runner
from .errors import BuildError, RepogenError
from .runtime import (
    ConstantPadder,
    Counter,
    Gauge,
    Histogram,
    InferenceError,
    InvalidArgumentError,
    ModelCallError,
    ModelCallTimeout,
    ModelContext,
    NotFoundError,
    PyTritonBadParameterError,
    PyTritonError,
    PyTritonUnrecoverableError,
    Request,
    TritonContext,
    UnavailableError,
    batch,
    bind_context,
    factory,
    fill_optionals,
    first_value,
    group_by_keys,
    group_by_values,
    pad_batch,
    sample,
    stream_cancelled,
    traced_span,
    triton_context,
)
from .version import __version__

_BUILD_NAMES = ("BuildResult", "build_app", "build_repository")


def _run_locally(repository: Repository) -> Any:
    from .local import LocalRepository

    return LocalRepository(repository)


def _serve(triton: Triton) -> Any:
    from .launch import launch

    return launch(triton)


set_local_runner(_run_locally)
set_server_runner(_serve)


def __getattr__(name: str) -> Any:
    if name in _BUILD_NAMES:
        from . import build

        return getattr(build, name)
    raise AttributeError(f"module 'repogen' has no attribute {name!r}")


__all__ = [
    "BuildError",
    "RepogenError",
    "BuildResult",
    "ConstantPadder",
    "Counter",
    "DynamicBatcher",
    "Gauge",
    "Histogram",
    "InferenceError",
    "InstanceGroup",
    "InvalidArgumentError",
    "ModelCallError",
    "ModelCallTimeout",
    "ModelConfig",
    "ModelContext",
    "ModelHandle",
    "ModelWarmup",
    "NotFoundError",
    "PyTritonBadParameterError",
    "PyTritonError",
    "PyTritonUnrecoverableError",
    "QueuePolicy",
    "RateLimiter",
    "Repository",
    "Request",
    "SequenceBatcher",
    "ServerOptions",
    "Tensor",
    "TimeoutAction",
    "Triton",
    "TritonConfig",
    "TritonLifecyclePolicy",
    "TritonSecurityConfig",
    "TritonContext",
    "UnavailableError",
    "VersionPolicy",
    "Warmup",
    "WarmupInput",
    "__version__",
    "batch",
    "bind_context",
    "build_app",
    "build_repository",
    "fill_optionals",
    "first_value",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "stream_cancelled",
    "traced_span",
    "triton_context",
    "factory",
]
