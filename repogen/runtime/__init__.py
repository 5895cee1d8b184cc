"""Code that runs inside tritonserver's Python backend.

Everything under this package is copied into every generated model version directory, so it
imports only the standard library and numpy, and only relative to itself.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import TensorSpec, TritonContext, TritonModelConfig, bind_context
    from .decorators import (
        ConstantPadder,
        batch,
        fill_optionals,
        first_value,
        group_by_keys,
        group_by_values,
        pad_batch,
        sample,
        triton_context,
    )
    from .errors import InferenceError, PyTritonUnrecoverableError
    from .instance import ModelContext, factory
    from .request import Request

# Each name's module, imported on first use: a model's stub imports only what its payload and
# triton_model need (the decorators it does not use cost ~15 ms of every model's load otherwise).
_HOMES = {
    "TensorSpec": "context", "TritonContext": "context", "TritonModelConfig": "context", "bind_context": "context",
    "ConstantPadder": "decorators", "batch": "decorators", "fill_optionals": "decorators",
    "first_value": "decorators", "group_by_keys": "decorators", "group_by_values": "decorators",
    "pad_batch": "decorators", "sample": "decorators", "triton_context": "decorators",
    "InferenceError": "errors", "PyTritonUnrecoverableError": "errors",
    "ModelContext": "instance", "factory": "instance", "Request": "request",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ConstantPadder",
    "InferenceError",
    "ModelContext",
    "PyTritonUnrecoverableError",
    "Request",
    "TensorSpec",
    "TritonContext",
    "TritonModelConfig",
    "batch",
    "bind_context",
    "factory",
    "fill_optionals",
    "first_value",
    "group_by_keys",
    "group_by_values",
    "pad_batch",
    "sample",
    "triton_context",
]
