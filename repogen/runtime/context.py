"""What a served callable may know about the model it serves: PyTriton's ``triton_context``.

PyTriton hands ``@triton_context`` callables a context whose ``model_configs[callable]`` is the
model's configuration. Here the server is the only source of truth, so ``TritonPythonModel``
builds a :class:`TritonContext` from its ``initialize`` arguments and calls :func:`bind_context`;
decorators that need the configuration (``@fill_optionals``, ``@pad_batch``, ``@first_value``,
``@triton_context``) find it through :func:`find_context`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import inspect
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .contract import BY_ENUM, NUMPY_DTYPES

CONTEXT_ATTRIBUTE = "__triton_context__"  # PyTriton's attribute name, so hand-set contexts work too

_current: TritonContext | None = None  # one stub process serves one model instance


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One declared input or output, shaped like PyTriton's ``TensorSpec`` (shape has no batch axis)."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    optional: bool = False


@dataclasses.dataclass(frozen=True)
class Batcher:
    """The dynamic batcher's settings that decorators read (PyTriton's ``DynamicBatcher`` field names)."""

    preferred_batch_size: tuple[int, ...] | None = None
    max_queue_delay_microseconds: int = 0


@dataclasses.dataclass(frozen=True)
class TritonModelConfig:
    """The served model's configuration, with PyTriton's ``TritonModelConfig`` field names.

    ``raw`` is the configuration JSON Triton passed to ``initialize``, for anything not mirrored.
    """

    model_name: str
    model_version: int = 1
    max_batch_size: int = 0
    batcher: Batcher | None = None
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    decoupled: bool = False
    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @property
    def batching(self) -> bool:
        return self.max_batch_size > 0

    @classmethod
    def from_json(cls, config: Mapping[str, Any], version: int = 1) -> TritonModelConfig:
        """Parse Triton's model configuration JSON (int64 fields may arrive as strings)."""
        batcher = None
        dynamic = config.get("dynamic_batching")
        if dynamic is not None:
            preferred = tuple(int(n) for n in dynamic.get("preferred_batch_size", ()))
            delay = int(dynamic.get("max_queue_delay_microseconds", 0))
            batcher = Batcher(preferred or None, delay)
        policy = config.get("model_transaction_policy") or {}
        return cls(
            model_name=str(config.get("name", "")),
            model_version=version,
            max_batch_size=int(config.get("max_batch_size", 0)),
            batcher=batcher,
            inputs=tuple(_tensor_spec(t) for t in config.get("input", [])),
            outputs=tuple(_tensor_spec(t) for t in config.get("output", [])),
            decoupled=bool(policy.get("decoupled", False)),
            raw=config,
        )


def _tensor_spec(tensor: Mapping[str, Any]) -> TensorSpec:
    data_type = tensor.get("data_type", "")
    # numpy's dtype where it has one; BF16's element name ("bfloat16"), which only a framework holds
    dtype = NUMPY_DTYPES.get(data_type) or (BY_ENUM[data_type].element if data_type in BY_ENUM else np.dtype(object))
    shape = tuple(int(d) for d in tensor.get("dims", ()))
    return TensorSpec(str(tensor["name"]), shape, dtype, bool(tensor.get("optional", False)))


class _AnyKey(Mapping[Any, TritonModelConfig]):
    """PyTriton code reads ``context.model_configs[infer_func]``; every key maps to this model's config."""

    def __init__(self, config: TritonModelConfig):
        self._config = config

    def __getitem__(self, key: Any) -> TritonModelConfig:
        return self._config

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 1

    def __contains__(self, key: object) -> bool:
        return True


@dataclasses.dataclass(frozen=True)
class TritonContext:
    """The model and the instance a callable runs in; passed as ``triton_context`` by ``@triton_context``."""

    model_config: TritonModelConfig
    instance_name: str = ""
    instance_index: int = 0
    instance_kind: str = "CPU"
    device_id: int = 0
    model_repository: str = ""
    model_dir: str = ""  # the version directory: model.py, model.pkl, files/
    tensors: str = "numpy"  # what the callable takes: numpy, or the framework it declared (ModelConfig(tensors=...))

    @property
    def device(self) -> str:
        """Where this instance computes: ``cuda:<id>`` on a KIND_GPU instance (its own GPU), else ``cpu``.

        A framework's name for the device (``torch.device(context.device)``), and the device of the
        tensors a model that declared ``tensors="torch"`` receives.
        """
        return instance_device(self.instance_kind, self.device_id)

    @property
    def files_dir(self) -> str:
        return os.path.join(self.model_dir, "files")

    def path(self, name: str) -> str:
        """Absolute path of a file shipped with ``files=[...]`` at build time."""
        path = os.path.join(self.files_dir, name)
        if not os.path.exists(path):
            shipped = _shipped(self.files_dir)
            close = difflib.get_close_matches(name, shipped, n=1)
            fix = f"Did you mean '{close[0]}'?" if close else "List it in files=[...] when binding the model"
            missing = f"model '{self.model_name}' has no shipped file '{name}'"
            raise FileNotFoundError(f"{missing}; shipped: {shipped}. {fix}")
        return path

    @property
    def model_name(self) -> str:
        return self.model_config.model_name

    @property
    def model_version(self) -> int:
        return self.model_config.model_version

    @property
    def model_configs(self) -> Mapping[Any, TritonModelConfig]:
        return _AnyKey(self.model_config)

    @classmethod
    def from_args(cls, args: Mapping[str, str], tensors: str = "numpy") -> TritonContext:
        """Build the context from ``TritonPythonModel.initialize``'s ``args``."""
        version = int(args.get("model_version") or 1)
        raw = json.loads(args["model_config"])
        config = TritonModelConfig.from_json(raw, version)
        if not config.model_name:
            config = dataclasses.replace(config, model_name=args.get("model_name", ""))
        return cls(
            model_config=config,
            instance_name=args.get("model_instance_name", ""),
            instance_index=instance_index(args, raw),
            instance_kind=_kind(args),
            device_id=_device_id(args),
            model_repository=args.get("model_repository", ""),
            model_dir=os.path.join(args.get("model_repository", ""), str(version)),
            tensors=tensors,
        )

    @staticmethod
    def device_of(args: Mapping[str, str]) -> str:
        """The instance's device (``cuda:<id>`` or ``cpu``) from ``initialize``'s ``args`` alone."""
        return instance_device(_kind(args), _device_id(args))


def instance_device(kind: str, device_id: int) -> str:
    """``cuda:<id>`` on a KIND_GPU instance, ``cpu`` elsewhere: where a framework model's tensors live."""
    return f"cuda:{device_id}" if kind.upper().endswith("GPU") else "cpu"


def _kind(args: Mapping[str, str]) -> str:
    return args.get("model_instance_kind", "CPU") or "CPU"


def _device_id(args: Mapping[str, str]) -> int:
    return int(args.get("model_instance_device_id") or 0)


def instance_index(args: Mapping[str, str], config: Mapping[str, Any]) -> int:
    """The position of this instance among all of the model's instances.

    Triton names an instance ``<group name>_<k>`` (``k`` < the group's count) and gives each GPU
    of a group the same name, so the GPU's place in ``gpus`` completes the index. It picks the
    callable of ``infer_func=[...]``.
    """
    group_name, _, tail = args.get("model_instance_name", "").rpartition("_")
    k = int(tail) if tail.isdigit() else 0
    offset = 0
    for group in config.get("instance_group", []):
        gpus = [int(g) for g in group.get("gpus", [])]
        if group.get("name") == group_name:
            device = int(args.get("model_instance_device_id", 0) or 0)
            return offset + k * max(1, len(gpus)) + (gpus.index(device) if device in gpus else 0)
        offset += int(group.get("count", 1)) * max(1, len(gpus))
    return k


def bind_context(target: Any, context: TritonContext) -> Any:
    """Attach ``context`` to a callable, its instance and every layer it wraps; return ``target``.

    Also makes it the process's context, so that decorated helpers called from inside a class
    model find it too (the Python backend runs one stub process per model instance).
    """
    global _current
    _current = context
    owner = getattr(target, "__self__", None) if inspect.ismethod(target) else None
    layer = getattr(target, "__func__", target) if owner is not None else target
    for obj in (owner, *_layers(layer)):
        if obj is not None:
            with contextlib.suppress(AttributeError, TypeError):  # builtins, slots: found via the fallback
                setattr(obj, CONTEXT_ATTRIBUTE, context)
    return target


def _layers(obj: Any) -> Iterator[Any]:
    seen: set[int] = set()
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        yield obj
        obj = getattr(obj, "__wrapped__", None)


def find_context(*owners: Any) -> TritonContext | None:
    """The context bound to the first owner that has one, else the process's context."""
    for owner in owners:
        context = getattr(owner, CONTEXT_ATTRIBUTE, None) if owner is not None else None
        if context is not None:
            return context  # type: ignore[no-any-return]
    return _current


def reset_context() -> None:
    """Forget the process's context (tests)."""
    global _current
    _current = None


def _shipped(files_dir: str) -> list[str]:
    """Every shipped file's path relative to ``files/`` (``assets/greeting.txt``), sorted."""
    found = []
    for root, _, names in os.walk(files_dir):
        found += [os.path.relpath(os.path.join(root, n), files_dir).replace(os.sep, "/") for n in names]
    return sorted(found)
