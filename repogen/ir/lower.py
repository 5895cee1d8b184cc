"""DSL → IR: the one place where declarations are validated.

Every error names the model and, where there is one, the tensor, then says what was expected,
what was found and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..dsl.config import DynamicBatcher, ModelConfig, QueuePolicy, TimeoutAction
from ..dsl.repository import ModelDefinition, Repository
from ..dsl.tensor import Tensor
from ..errors import BuildError
from .dtypes import triton_data_type
from .spec import DynamicBatchingSpec, ModelSpec, QueuePolicySpec, RepositorySpec, TensorSpec, VersionSpec

# A model name becomes a directory name; a tensor name travels in URLs and protobuf strings.
MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
TENSOR_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/\-]{0,127}$")


def lower(repository: Repository) -> RepositorySpec:
    """Validate every declaration of ``repository`` and return its IR."""
    if not isinstance(repository, Repository):
        raise BuildError(
            f"expected a repogen.Repository, found {type(repository).__name__}; point `repogen build` "
            "at the Repository object, e.g. app.py:models"
        )
    by_name: dict[str, list[ModelDefinition]] = {}
    for definition in repository.definitions:
        _check_model_name(definition.name)
        by_name.setdefault(definition.name, []).append(definition)
    if not by_name:
        raise BuildError("the repository declares no model; add one with models.bind(...) or @models.model(...)")
    return RepositorySpec(models=tuple(_lower_model(name, defs) for name, defs in sorted(by_name.items())))


def _check_model_name(name: Any) -> None:
    if not isinstance(name, str) or not MODEL_NAME.match(name):
        raise BuildError(
            f"model name {name!r} is not a valid Triton model name: expected letters, digits, '_', "
            "'.' or '-' (not starting with '.' or '-', at most 128 characters), since it becomes the "
            "model's directory name"
        )


def _lower_model(name: str, definitions: list[ModelDefinition]) -> ModelSpec:
    first = definitions[0]
    where = f"model '{name}'"
    versions = []
    for definition in definitions:
        if (definition.inputs, definition.outputs, definition.config, definition.strict) != (
            first.inputs,
            first.outputs,
            first.config,
            first.strict,
        ):
            raise BuildError(
                f"{where} is bound more than once with different inputs, outputs, config or strict; "
                "versions of one model share one config.pbtxt, so bind them identically or use "
                "another model name"
            )
        versions.append(_lower_version(where, definition))
    numbers = [v.version for v in versions]
    if len(set(numbers)) != len(numbers):
        raise BuildError(
            f"{where} is bound twice with model_version={sorted(n for n in numbers if numbers.count(n) > 1)[0]}; "
            "give each binding its own model name or a distinct model_version"
        )
    counts = {len(v.infer_funcs) for v in versions}
    if len(counts) != 1:
        raise BuildError(
            f"{where}: every version must bind the same number of callables (one per instance); found {sorted(counts)}"
        )
    config = first.config
    if not isinstance(config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(config).__name__}")
    max_batch_size = _max_batch_size(where, config)
    return ModelSpec(
        name=name,
        inputs=_lower_tensors(where, "input", first.inputs),
        outputs=_lower_tensors(where, "output", first.outputs, allow_optional=False),
        max_batch_size=max_batch_size,
        scheduler=_lower_batcher(where, config.batcher, max_batch_size) if max_batch_size else None,
        instance_count=counts.pop(),
        response_cache=bool(config.response_cache),
        decoupled=bool(config.decoupled),
        strict=bool(first.strict),
        parameters=_lower_parameters(where, config.parameters),
        versions=tuple(sorted(versions, key=lambda v: v.version)),
    )


def _lower_version(where: str, definition: ModelDefinition) -> VersionSpec:
    version = definition.version
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BuildError(f"{where}: model_version must be an integer >= 1, found {version!r}")
    if not definition.infer_funcs:
        raise BuildError(f"{where}: infer_func is an empty list; pass a callable or a list of callables")
    for index, func in enumerate(definition.infer_funcs):
        if not callable(func):
            raise BuildError(
                f"{where}: infer_func[{index}] is a {type(func).__name__}, not a callable; pass a function, "
                "a callable object or a list of them"
            )
    return VersionSpec(version=version, infer_funcs=tuple(definition.infer_funcs))


def _max_batch_size(where: str, config: ModelConfig) -> int:
    if not config.batching:
        return 0
    size = config.max_batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise BuildError(f"{where}: max_batch_size must be an integer >= 0, found {size!r}")
    return size


def _lower_tensors(
    where: str, kind: str, tensors: Sequence[Tensor], allow_optional: bool = True
) -> tuple[TensorSpec, ...]:
    if kind == "output" and not tensors:
        raise BuildError(f"{where}: declares no outputs; a Triton model needs at least one output Tensor")
    specs = []
    seen: set[str] = set()
    for index, tensor in enumerate(tensors, start=1):
        if not isinstance(tensor, Tensor):
            raise BuildError(f"{where}: {kind} #{index} is a {type(tensor).__name__}; declare it with repogen.Tensor")
        name = tensor.name if tensor.name is not None else f"{kind.upper()}_{index}"
        label = f"{where}, {kind} '{name}'"
        if not isinstance(name, str) or not TENSOR_NAME.match(name):
            raise BuildError(
                f"{where}: {kind} name {name!r} is invalid; expected letters, digits and '_', '.', ':', '/', "
                "'-' (at most 128 characters)"
            )
        if name in seen:
            raise BuildError(f"{where}: {kind} '{name}' is declared twice; give each {kind} a unique name")
        seen.add(name)
        if tensor.optional and not allow_optional:
            raise BuildError(f"{label}: outputs cannot be optional; only inputs may set optional=True")
        specs.append(
            TensorSpec(
                name=name,
                data_type=triton_data_type(tensor.dtype, label),
                dims=_lower_shape(label, tensor.shape),
                optional=bool(tensor.optional),
            )
        )
    return tuple(specs)


def _lower_shape(label: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        dims = tuple(int(d) for d in shape)
        exact = all(int(d) == d and not isinstance(d, bool) for d in shape)
    except (TypeError, ValueError):
        dims, exact = (), False
    if not exact or not dims or any(d == 0 or d < -1 for d in dims):
        raise BuildError(
            f"{label}: shape must be a non-empty tuple of positive ints or -1 (variable), found {shape!r}; "
            "leave out the batch axis when the model batches, and use (1,) for a scalar per sample"
        )
    return dims


def _lower_batcher(where: str, batcher: DynamicBatcher | None, max_batch_size: int) -> DynamicBatchingSpec | None:
    if batcher is None:
        return None
    if not isinstance(batcher, DynamicBatcher):
        raise BuildError(f"{where}: batcher must be a repogen.DynamicBatcher, found {type(batcher).__name__}")
    preferred = tuple(batcher.preferred_batch_size or ())
    bad = [p for p in preferred if not isinstance(p, int) or not 1 <= p <= max_batch_size]
    if bad:
        raise BuildError(
            f"{where}: preferred_batch_size {list(preferred)} has {bad}; each must be between 1 and "
            f"max_batch_size={max_batch_size}"
        )
    if batcher.max_queue_delay_microseconds < 0:
        raise BuildError(
            f"{where}: max_queue_delay_microseconds must be >= 0, found {batcher.max_queue_delay_microseconds}"
        )
    levels = batcher.priority_levels
    if levels < 0 or (levels and not 1 <= batcher.default_priority_level <= levels):
        raise BuildError(
            f"{where}: default_priority_level={batcher.default_priority_level} must be between 1 and "
            f"priority_levels={levels} when priority levels are used"
        )
    per_level = []
    for level, policy in sorted((batcher.priority_queue_policy or {}).items()):
        if not 1 <= level <= levels:
            raise BuildError(
                f"{where}: priority_queue_policy has level {level}; levels run from 1 to priority_levels={levels}"
            )
        per_level.append((level, _lower_queue_policy(where, policy)))
    return DynamicBatchingSpec(
        max_queue_delay_microseconds=batcher.max_queue_delay_microseconds,
        preferred_batch_size=preferred,
        preserve_ordering=bool(batcher.preserve_ordering),
        priority_levels=levels,
        default_priority_level=batcher.default_priority_level,
        default_queue_policy=(
            _lower_queue_policy(where, batcher.default_queue_policy) if batcher.default_queue_policy else None
        ),
        priority_queue_policy=tuple(per_level),
    )


def _lower_queue_policy(where: str, policy: QueuePolicy) -> QueuePolicySpec:
    if not isinstance(policy, QueuePolicy):
        raise BuildError(f"{where}: queue policies must be repogen.QueuePolicy, found {type(policy).__name__}")
    action = policy.timeout_action
    action_name = action.value if isinstance(action, TimeoutAction) else str(action).upper()
    if action_name not in ("REJECT", "DELAY"):
        raise BuildError(f"{where}: timeout_action must be TimeoutAction.REJECT or DELAY, found {action!r}")
    if policy.default_timeout_microseconds < 0 or policy.max_queue_size < 0:
        raise BuildError(f"{where}: queue policy timeouts and max_queue_size must be >= 0")
    return QueuePolicySpec(
        timeout_action=action_name,
        default_timeout_microseconds=policy.default_timeout_microseconds,
        allow_timeout_override=bool(policy.allow_timeout_override),
        max_queue_size=policy.max_queue_size,
    )


def _lower_parameters(where: str, parameters: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    items = []
    for key, value in sorted((parameters or {}).items()):
        if not isinstance(key, str) or not isinstance(value, str):
            raise BuildError(
                f"{where}: parameters must map str to str (Triton stores them as string_value), found "
                f"{key!r}: {value!r}"
            )
        items.append((key, value))
    return tuple(items)
