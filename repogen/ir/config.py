"""A ``ModelConfig`` → the configuration fields of a served model, the one lowering of them.

Python models and fused ensembles (one Python model Triton serves for a ``fuse=True`` ensemble)
both become a ``ModelSpec`` with a ``config.pbtxt``; lowering their ``ModelConfig`` in one place
keeps what either accepts the same (a parameter must be a string in both, as Triton stores it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..dsl.config import ModelConfig
from ..errors import BuildError
from .batching import lower_scheduler
from .gpu_instances import Held
from .instances import lower_instance_groups
from .placement import lower_placement
from .spec import DynamicBatchingSpec, InstanceGroupSpec, IOSpec, PlacementSpec, SequenceBatchingSpec, WarmupSpec
from .warmup import lower_warmup


@dataclasses.dataclass(frozen=True)
class LoweredConfig:
    scheduler: DynamicBatchingSpec | SequenceBatchingSpec | None
    instance_groups: tuple[InstanceGroupSpec, ...]
    response_cache: bool
    parameters: tuple[tuple[str, str], ...]
    warmup: tuple[WarmupSpec, ...]
    placement: PlacementSpec


def lower_config(
    where: str,
    name: str,
    config: ModelConfig,
    inputs: tuple[IOSpec, ...],
    batch: int,
    instances: int,
    held: Sequence[Held | None] = (),
) -> LoweredConfig:
    """``instances`` is the number of callables bound (one per instance when more than one); ``held``, the CUDA
    tensors each holds (``gpu_instances.CudaScan``), which place them where no ``instance_groups`` say."""
    if not isinstance(config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(config).__name__}")
    groups = lower_instance_groups(name, config.instance_groups, instances, held)
    parameters = lower_parameters(where, config.parameters)
    placement, parameters = lower_placement(where, config.tensors, inputs, groups, parameters, config.output_memory)
    return LoweredConfig(
        scheduler=lower_scheduler(where, config.batcher, batch, inputs),
        instance_groups=groups,
        response_cache=bool(config.response_cache),
        parameters=parameters,
        warmup=lower_warmup(where, config.warmup, inputs, batch, config.model_warmup),
        placement=placement,
    )


def lower_parameters(where: str, parameters: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    items = []
    for key, value in sorted((parameters or {}).items()):
        if not isinstance(key, str) or not isinstance(value, str):
            raise BuildError(
                f"{where}: parameters must map str to str (Triton stores them as string_value), found "
                f"{key!r}: {value!r}"
            )
        items.append((key, value))
    return tuple(items)
