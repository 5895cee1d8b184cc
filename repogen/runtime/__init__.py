"""Code that runs inside tritonserver's Python backend.

Everything under this package is copied into every generated model version directory, so it
imports only the standard library and numpy, and only relative to itself.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers: each name from its home (`as` re-exports it; __all__ is made below)
    from .call_errors import ModelCallError as ModelCallError
    from .call_errors import ModelCallTimeout as ModelCallTimeout
    from .context import TensorSpec as TensorSpec
    from .context import TritonContext as TritonContext
    from .context import TritonModelConfig as TritonModelConfig
    from .context import bind_context as bind_context
    from .decorators import ConstantPadder as ConstantPadder
    from .decorators import batch as batch
    from .decorators import fill_optionals as fill_optionals
    from .decorators import first_value as first_value
    from .decorators import group_by_keys as group_by_keys
    from .decorators import group_by_values as group_by_values
    from .decorators import pad_batch as pad_batch
    from .decorators import sample as sample
    from .decorators import triton_context as triton_context
    from .errors import InferenceError as InferenceError
    from .errors import InvalidArgumentError as InvalidArgumentError
    from .errors import NotFoundError as NotFoundError
    from .errors import PyTritonBadParameterError as PyTritonBadParameterError
    from .errors import PyTritonError as PyTritonError
    from .errors import PyTritonUnrecoverableError as PyTritonUnrecoverableError
    from .errors import UnavailableError as UnavailableError
    from .instance import ModelContext as ModelContext
    from .instance import factory as factory
    from .request import Request as Request
    from .stream_cancellation import stream_cancelled as stream_cancelled
    from .tracing import traced_span as traced_span
    from .user_metrics import Counter as Counter
    from .user_metrics import Gauge as Gauge
    from .user_metrics import Histogram as Histogram

# Each name's module, imported on first use: a model's stub imports only what its payload and
# triton_model need (the decorators it does not use cost ~15 ms of every model's load otherwise).
_HOMES = {
    "TensorSpec": "context", "TritonContext": "context", "TritonModelConfig": "context", "bind_context": "context",
    "ConstantPadder": "decorators", "batch": "decorators", "fill_optionals": "decorators",
    "first_value": "decorators", "group_by_keys": "decorators", "group_by_values": "decorators",
    "pad_batch": "decorators", "sample": "decorators", "triton_context": "decorators",
    "InferenceError": "errors", "InvalidArgumentError": "errors", "NotFoundError": "errors",
    "PyTritonBadParameterError": "errors", "PyTritonError": "errors", "PyTritonUnrecoverableError": "errors",
    "UnavailableError": "errors", "ModelCallError": "call_errors", "ModelCallTimeout": "call_errors",
    "ModelContext": "instance", "factory": "instance", "Request": "request", "stream_cancelled": "stream_cancellation",
    "Counter": "user_metrics", "Gauge": "user_metrics", "Histogram": "user_metrics", "traced_span": "tracing",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


# Exactly the names of the TYPE_CHECKING imports above, so a type checker and a lazy import see one set.
__all__ = sorted(_HOMES)
