"""Code that runs inside tritonserver's Python backend.

Everything under this package is copied into every generated model version directory, so it
imports only the standard library and numpy, and only relative to itself.
"""

from .decorators import batch
from .errors import InferenceError, PyTritonUnrecoverableError
from .instance import ModelContext, factory
from .request import Request

__all__ = ["InferenceError", "ModelContext", "PyTritonUnrecoverableError", "Request", "batch", "factory"]
