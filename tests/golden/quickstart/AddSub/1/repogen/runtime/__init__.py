"""Code that runs inside tritonserver's Python backend.

Everything under this package is copied into every generated model version directory, so it
imports only the standard library and numpy, and only relative to itself.
"""

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
