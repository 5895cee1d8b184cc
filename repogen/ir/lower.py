"""DSL → IR: the one place where declarations are validated.

Every error names the model and, where there is one, the tensor, then says what was expected,
what was found and how to fix it.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..dsl.config import (
    DynamicBatcher,
    InstanceGroup,
    ModelConfig,
    QueuePolicy,
    SequenceBatcher,
    TimeoutAction,
    VersionPolicy,
)
from ..dsl.repository import EnsembleDefinition, ModelDefinition, Repository
from ..dsl.tensor import Tensor
from ..errors import BuildError
from ..triton.dtypes import triton_data_type
from .ensembles import Interface, find_cycle, lower_ensemble
from .lower_extras import lower_rate_limiter, lower_sequence_batcher, lower_warmup
from .references import referenced_handles
from .spec import (
    DynamicBatchingSpec,
    InstanceGroupSpec,
    ModelSpec,
    QueuePolicySpec,
    RepositorySpec,
    SequenceBatchingSpec,
    TensorSpec,
    VersionSpec,
)

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
    models = [_lower_model(name, defs) for name, defs in sorted(by_name.items())]
    interfaces = {m.name: Interface(m.inputs, m.outputs, m.max_batch_size) for m in models}
    for ensemble in repository.ensembles:
        _check_model_name(ensemble.name)
        if ensemble.name in interfaces:
            raise BuildError(
                f"ensemble '{ensemble.name}' has the name of another model or ensemble; names are directory "
                "names and must be unique"
            )
        interfaces[ensemble.name] = _ensemble_interface(ensemble)
    ensembles = sorted(
        (lower_ensemble(repository, d, interfaces[d.name], interfaces) for d in repository.ensembles),
        key=lambda e: e.name,
    )
    cycle = find_cycle({e.name: [step.model for step in e.steps] for e in ensembles})
    if cycle:
        raise BuildError(f"ensembles form a cycle: {' -> '.join(cycle)}; an ensemble cannot contain itself")
    models = [_with_calls(repository, model, set(interfaces)) for model in models]
    return RepositorySpec(models=tuple(models), ensembles=tuple(ensembles))


def _ensemble_interface(definition: EnsembleDefinition) -> Interface:
    where = f"ensemble '{definition.name}'"
    if not isinstance(definition.config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(definition.config).__name__}")
    return Interface(
        inputs=_lower_tensors(where, "input", definition.inputs),
        outputs=_lower_tensors(where, "output", definition.outputs, allow_optional=False),
        max_batch_size=_max_batch_size(where, definition.config),
    )


def _with_calls(repository: Repository, model: ModelSpec, names: set[str]) -> ModelSpec:
    """Record the models each version calls through BLS; each must be in this repository."""
    versions = []
    for version in model.versions:
        calls = set()
        for handle in referenced_handles(list(version.infer_funcs)):
            if handle.repository is not repository or handle.name not in names:
                raise BuildError(
                    f"model '{model.name}' calls model '{handle.name}' through BLS, but '{handle.name}' is not in "
                    "this repository; bind it to the same Repository"
                )
            calls.add(handle.name)
        versions.append(dataclasses.replace(version, calls=tuple(sorted(calls))))
    return dataclasses.replace(model, versions=tuple(versions))


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
    inputs = _lower_tensors(where, "input", first.inputs)
    return ModelSpec(
        name=name,
        inputs=inputs,
        outputs=_lower_tensors(where, "output", first.outputs, allow_optional=False),
        max_batch_size=max_batch_size,
        scheduler=_lower_scheduler(where, config.batcher, max_batch_size, inputs),
        instance_groups=_lower_instance_groups(where, config.instance_groups, counts.pop()),
        version_policy=lower_version_policy(where, config.version_policy, versions),
        response_cache=bool(config.response_cache),
        decoupled=bool(config.decoupled) or any(_streams(f) for v in versions for f in v.infer_funcs),
        strict=bool(first.strict),
        parameters=_lower_parameters(where, config.parameters),
        versions=tuple(sorted(versions, key=lambda v: v.version)),
        files=_lower_files(where, first.files),
        warmup=lower_warmup(where, config.warmup, inputs, max_batch_size),
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
        if tensor.labels is not None and kind != "output":
            raise BuildError(f"{label}: labels belong to outputs (Triton's classification extension), not inputs")
        specs.append(
            TensorSpec(
                name=name,
                data_type=triton_data_type(tensor.dtype, label),
                dims=_lower_shape(label, tensor.shape),
                optional=bool(tensor.optional),
                labels=_lower_labels(label, tensor.labels),
                reshape=_lower_reshape(label, tensor.reshape),
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


def _lower_scheduler(
    where: str, batcher: Any, max_batch_size: int, inputs: Sequence[TensorSpec]
) -> DynamicBatchingSpec | SequenceBatchingSpec | None:
    """One scheduler at most: Triton's ``scheduling_choice`` oneof would silently drop the other."""
    if isinstance(batcher, SequenceBatcher):
        return lower_sequence_batcher(where, batcher, max_batch_size, inputs)
    return _lower_batcher(where, batcher, max_batch_size) if max_batch_size else None


def _lower_batcher(where: str, batcher: DynamicBatcher | None, max_batch_size: int) -> DynamicBatchingSpec | None:
    if batcher is None:
        return None
    if not isinstance(batcher, DynamicBatcher):
        raise BuildError(
            f"{where}: batcher must be a repogen.DynamicBatcher or SequenceBatcher, found {type(batcher).__name__}"
        )
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


_KINDS = {"KIND_CPU": "KIND_CPU", "CPU": "KIND_CPU", "KIND_GPU": "KIND_GPU", "GPU": "KIND_GPU"}


def _lower_instance_groups(
    where: str, groups: Sequence[InstanceGroup] | None, callables: int
) -> tuple[InstanceGroupSpec, ...]:
    """Groups get explicit names ``<model>_<i>`` so the runtime can find an instance's callable."""
    name = where.split("'")[1]
    if not groups:
        return (InstanceGroupSpec(name=f"{name}_0", kind="KIND_CPU", count=callables, gpus=()),)
    specs = []
    for index, group in enumerate(groups):
        if not isinstance(group, InstanceGroup):
            raise BuildError(f"{where}: instance_groups[{index}] must be a repogen.InstanceGroup, found {group!r}")
        kind = _KINDS.get(str(group.kind).upper())
        if kind is None:
            raise BuildError(
                f"{where}: instance_groups[{index}].kind must be KIND_CPU or KIND_GPU, found {group.kind!r}"
            )
        gpus = tuple(group.gpus or ())
        if isinstance(group.count, bool) or not isinstance(group.count, int) or group.count < 1:
            raise BuildError(f"{where}: instance_groups[{index}].count must be an integer >= 1, found {group.count!r}")
        if gpus and kind != "KIND_GPU":
            raise BuildError(
                f"{where}: instance_groups[{index}] lists gpus {list(gpus)} but is {kind}; use kind='KIND_GPU'"
            )
        if any(not isinstance(g, int) or g < 0 for g in gpus):
            raise BuildError(f"{where}: instance_groups[{index}].gpus must be device ids >= 0, found {list(gpus)}")
        specs.append(
            InstanceGroupSpec(
                name=f"{name}_{index}",
                kind=kind,
                count=group.count,
                gpus=gpus,
                rate_limiter=lower_rate_limiter(where, group.rate_limiter),
            )
        )
    total = sum(spec.instances for spec in specs)
    if callables > 1 and total != callables:
        raise BuildError(
            f"{where}: infer_func lists {callables} callables (one per instance) but instance_groups make {total} "
            "instances; bind one callable, or as many as there are instances"
        )
    return tuple(specs)


def lower_version_policy(
    where: str, policy: VersionPolicy | None, versions: list[VersionSpec]
) -> tuple[str, tuple[int, ...]] | None:
    numbers = sorted(v.version for v in versions)
    if policy is None:
        return ("all", ()) if len(numbers) > 1 else None
    if not isinstance(policy, VersionPolicy) or policy.kind not in ("latest", "all", "specific"):
        raise BuildError(f"{where}: version_policy must be VersionPolicy.latest(n), .all() or .specific(...)")
    if policy.kind == "latest" and (len(policy.versions) != 1 or policy.versions[0] < 1):
        raise BuildError(f"{where}: VersionPolicy.latest(n) needs n >= 1, found {policy.versions}")
    missing = sorted(set(policy.versions) - set(numbers)) if policy.kind == "specific" else []
    if missing or (policy.kind == "specific" and not policy.versions):
        raise BuildError(
            f"{where}: VersionPolicy.specific{tuple(policy.versions)} names versions {missing or '()'} that are not "
            f"bound; bound versions: {numbers}"
        )
    return policy.kind, tuple(policy.versions)


def _lower_labels(label: str, labels: Any) -> tuple[str, ...] | None:
    if labels is None:
        return None
    if isinstance(labels, (str, os.PathLike)):
        path = Path(labels)
        if not path.is_file():
            raise BuildError(f"{label}: labels file {path} does not exist; pass a list of labels or an existing file")
        labels = path.read_text(encoding="utf-8").splitlines()
    items = tuple(labels)
    if not items or not all(isinstance(item, str) and "\n" not in item for item in items):
        raise BuildError(f"{label}: labels must be a non-empty list of single-line strings, found {labels!r}")
    return items


def _lower_files(where: str, files: Sequence[Path]) -> tuple[tuple[str, Path], ...]:
    shipped: dict[str, Path] = {}
    for path in files:
        if not path.exists():
            raise BuildError(f"{where}: file to ship {path} does not exist; paths are relative to the declaring module")
        if path.name in shipped:
            raise BuildError(
                f"{where}: two files to ship are named '{path.name}' ({shipped[path.name]} and {path}); "
                "rename one, or ship their common directory"
            )
        shipped[path.name] = path
    return tuple(sorted(shipped.items()))


def _streams(target: Any) -> bool:
    """A generator callable (possibly decorated, or a class's ``__call__``) is a decoupled model."""
    seen = 0
    while target is not None and seen < 32:
        if inspect.isclass(target):
            target = getattr(target, "__call__", None)  # noqa: B004 - the class's method, not callable()
        if inspect.isgeneratorfunction(target) or inspect.isasyncgenfunction(target):
            return True
        target = getattr(target, "__wrapped__", None)
        seen += 1
    return False


def _lower_reshape(label: str, reshape: Any) -> tuple[int, ...] | None:
    if reshape is None:
        return None
    try:
        dims = tuple(int(d) for d in reshape)
    except TypeError:
        dims = (0,)
    if any(d == 0 or d < -1 for d in dims):
        raise BuildError(f"{label}: reshape must be a tuple of positive ints or -1 (may be empty), found {reshape!r}")
    return dims
