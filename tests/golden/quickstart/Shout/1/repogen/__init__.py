# Vendored by repogen 0.1.0: the part of repogen that runs inside tritonserver.
"""Run-time names of repogen, so pickled references to them resolve without repogen installed."""

from .runtime import *  # noqa: F401,F403
from .runtime import __all__  # noqa: F401
