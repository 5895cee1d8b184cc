"""repogen: compile Python inference callables into a static NVIDIA Triton model repository.

``import repogen`` loads almost nothing: each public name loads its module on first use (PEP 562), so
``repogen --version`` imports neither numpy nor the DSL. ``from repogen import Repository, batch`` in a user's
app loads the declarations and the runtime's decorators (numpy, nothing else): the compiler (protobuf,
cloudpickle) loads when a build starts, the in-process runner when ``models.local()`` first runs a model, the
build and the server when ``Triton.run()`` starts. The runners are registered here, with the DSL's small
``dsl/runners.py``, so they are set however the DSL is imported.
"""

import importlib
from typing import TYPE_CHECKING, Any

from .dsl.runners import set_local_runner, set_server_runner
from .version import __version__

if TYPE_CHECKING:  # for type checkers: each name from its home (`as` re-exports it)
    from .build import BuildResult as BuildResult
    from .build import build_app as build_app
    from .build import build_repository as build_repository
    from .dsl import DynamicBatcher as DynamicBatcher
    from .dsl import InstanceGroup as InstanceGroup
    from .dsl import ModelConfig as ModelConfig
    from .dsl import ModelHandle as ModelHandle
    from .dsl import ModelWarmup as ModelWarmup
    from .dsl import QueuePolicy as QueuePolicy
    from .dsl import RateLimiter as RateLimiter
    from .dsl import Repository as Repository
    from .dsl import SequenceBatcher as SequenceBatcher
    from .dsl import ServerOptions as ServerOptions
    from .dsl import Tensor as Tensor
    from .dsl import TimeoutAction as TimeoutAction
    from .dsl import Triton as Triton
    from .dsl import TritonConfig as TritonConfig
    from .dsl import TritonLifecyclePolicy as TritonLifecyclePolicy
    from .dsl import TritonSecurityConfig as TritonSecurityConfig
    from .dsl import VersionPolicy as VersionPolicy
    from .dsl import Warmup as Warmup
    from .dsl import WarmupInput as WarmupInput
    from .errors import BuildError as BuildError
    from .errors import RepogenError as RepogenError
    from .runtime import ConstantPadder as ConstantPadder
    from .runtime import Counter as Counter
    from .runtime import Gauge as Gauge
    from .runtime import Histogram as Histogram
    from .runtime import InferenceError as InferenceError
    from .runtime import InvalidArgumentError as InvalidArgumentError
    from .runtime import ModelCallError as ModelCallError
    from .runtime import ModelCallTimeout as ModelCallTimeout
    from .runtime import ModelContext as ModelContext
    from .runtime import NotFoundError as NotFoundError
    from .runtime import PyTritonBadParameterError as PyTritonBadParameterError
    from .runtime import PyTritonError as PyTritonError
    from .runtime import PyTritonUnrecoverableError as PyTritonUnrecoverableError
    from .runtime import Request as Request
    from .runtime import TritonContext as TritonContext
    from .runtime import UnavailableError as UnavailableError
    from .runtime import batch as batch
    from .runtime import bind_context as bind_context
    from .runtime import factory as factory
    from .runtime import fill_optionals as fill_optionals
    from .runtime import first_value as first_value
    from .runtime import group_by_keys as group_by_keys
    from .runtime import group_by_values as group_by_values
    from .runtime import pad_batch as pad_batch
    from .runtime import sample as sample
    from .runtime import stream_cancelled as stream_cancelled
    from .runtime import traced_span as traced_span
    from .runtime import triton_context as triton_context

# Each public name's module (a package resolves it lazily in turn), imported on first use.
_HOMES = {
    "BuildResult": "build", "build_app": "build", "build_repository": "build",
    "DynamicBatcher": "dsl", "InstanceGroup": "dsl", "ModelConfig": "dsl", "ModelHandle": "dsl", "ModelWarmup": "dsl",
    "QueuePolicy": "dsl", "RateLimiter": "dsl", "Repository": "dsl", "SequenceBatcher": "dsl", "Tensor": "dsl",
    "TimeoutAction": "dsl", "Triton": "dsl", "TritonConfig": "dsl", "TritonLifecyclePolicy": "dsl",
    "TritonSecurityConfig": "dsl", "VersionPolicy": "dsl", "Warmup": "dsl", "WarmupInput": "dsl",
    "BuildError": "errors", "RepogenError": "errors",
    "ConstantPadder": "runtime", "InferenceError": "runtime", "ModelContext": "runtime",
    "PyTritonUnrecoverableError": "runtime", "Request": "runtime", "TritonContext": "runtime", "batch": "runtime",
    "bind_context": "runtime", "factory": "runtime", "fill_optionals": "runtime", "first_value": "runtime",
    "group_by_keys": "runtime", "group_by_values": "runtime", "pad_batch": "runtime", "sample": "runtime",
    "stream_cancelled": "runtime", "triton_context": "runtime", "ServerOptions": "dsl", "Counter": "runtime",
    "Gauge": "runtime", "Histogram": "runtime", "InvalidArgumentError": "runtime", "ModelCallError": "runtime",
    "ModelCallTimeout": "runtime", "NotFoundError": "runtime", "PyTritonBadParameterError": "runtime",
    "PyTritonError": "runtime", "UnavailableError": "runtime", "traced_span": "runtime",
}  # fmt: skip


def _run_locally(repository: Any) -> Any:
    from .local import LocalRepository

    return LocalRepository(repository)


def _serve(triton: Any) -> Any:
    from .build_and_serve import launch

    return launch(triton)


set_local_runner(_run_locally)
set_server_runner(_serve)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'repogen' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


# Exactly the names of the TYPE_CHECKING imports above, and __version__.
__all__ = ["__version__", *sorted(_HOMES)]
