"""What users write: PyTriton-compatible declarations of tensors, configs and models.

Each name loads its module on first use (PEP 562), so that importing a small module of the DSL
(``dsl/runners.py``, which ``repogen`` imports to register its runners) loads no declaration.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers: each name from its home (`as` re-exports it)
    from .config import DynamicBatcher as DynamicBatcher
    from .config import InstanceGroup as InstanceGroup
    from .config import ModelConfig as ModelConfig
    from .config import ModelWarmup as ModelWarmup
    from .config import QueuePolicy as QueuePolicy
    from .config import RateLimiter as RateLimiter
    from .config import SequenceBatcher as SequenceBatcher
    from .config import ServerOptions as ServerOptions
    from .config import TimeoutAction as TimeoutAction
    from .config import VersionPolicy as VersionPolicy
    from .config import Warmup as Warmup
    from .config import WarmupInput as WarmupInput
    from .handle import ModelHandle as ModelHandle
    from .pytriton import Triton as Triton
    from .repository import Repository as Repository
    from .tensor import Tensor as Tensor
    from .triton_config import TritonConfig as TritonConfig
    from .triton_config import TritonLifecyclePolicy as TritonLifecyclePolicy
    from .triton_config import TritonSecurityConfig as TritonSecurityConfig

_HOMES = {
    "DynamicBatcher": "config", "InstanceGroup": "config", "ModelConfig": "config", "ModelWarmup": "config",
    "QueuePolicy": "config", "RateLimiter": "config", "SequenceBatcher": "config", "TimeoutAction": "config",
    "VersionPolicy": "config", "Warmup": "config", "WarmupInput": "config", "ModelHandle": "handle",
    "Triton": "pytriton", "TritonConfig": "triton_config", "TritonLifecyclePolicy": "triton_config",
    "TritonSecurityConfig": "triton_config", "Repository": "repository", "Tensor": "tensor", "ServerOptions": "config",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


# Exactly the names of the TYPE_CHECKING imports above.
__all__ = sorted(_HOMES)
