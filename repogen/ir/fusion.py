"""``@models.ensemble(..., fuse=True)``: the steps of an ensemble run in one Python model.

Triton pays one server → stub round trip per Python step of an ensemble, which no runtime can
remove; a fused ensemble is one Python-backend model that runs its composing models' callables
in-process, in dependency order, each through the same conversion and checks as when it is
served alone, so the answers are the same. The composing models stay in the repository.

What cannot run in one process refuses here, naming the step: a decoupled step (its responses
stream), a sequence-batched step (its state lives per correlation id in its own instances), a step
that is an ensemble, a step input Triton would reshape, and steps pinned to different devices or
instance kinds.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..dsl.config import ModelConfig
from ..errors import BuildError
from .config import lower_config
from .spec import EnsembleSpec, FusedSpec, InstanceGroupSpec, ModelSpec, SequenceBatchingSpec, VersionSpec


def fuse(
    ensemble: EnsembleSpec,
    config: ModelConfig,
    models: Mapping[str, ModelSpec],
    exported: Mapping[str, str] | None = None,
) -> FusedSpec:
    """The fused model for a validated ``ensemble`` whose steps are the ``models`` named.

    ``exported`` names the exported networks (``models.onnx``, ...), each described for the error: a step
    that runs one is served by its own backend (or session), never inside the fused model.
    """
    where = f"ensemble '{ensemble.name}' (fuse=True)"
    step_models = []
    for step in ensemble.steps:
        model = models.get(step.model)
        label = f"{where}: step '{step.model}'"
        network = (exported or {}).get(step.model)
        if network is not None:
            raise BuildError(
                f"{label} is {network}, not a Python callable; fusing composes Python models only. Drop fuse=True "
                "to let Triton schedule the steps, or call that model through BLS from a Python model"
            )
        if model is None:
            raise BuildError(
                f"{label} is an ensemble; fusing composes Python models only. Call its steps from this ensemble's "
                "body instead, or drop fuse=True"
            )
        if model.decoupled:
            raise BuildError(
                f"{label} is decoupled (it streams responses), which a fused model cannot relay; drop fuse=True, "
                "or make the step return one response per request"
            )
        if isinstance(model.scheduler, SequenceBatchingSpec):
            raise BuildError(
                f"{label} uses sequence batching: its state lives per correlation id in its own instances; drop "
                "fuse=True for this ensemble"
            )
        reshaped = [t.name for t in model.inputs if t.reshape is not None]
        if reshaped:
            raise BuildError(
                f"{label} reshapes input(s) {reshaped}, which Triton does between models and a fused model does not; "
                "drop the reshape (reshape inside the callable), or drop fuse=True"
            )
        step_models.append(model)
    placements = {(g.kind, g.gpus) for m in step_models for g in m.instance_groups}
    if len(placements) > 1:
        found = "; ".join(f"'{m.name}' on {', '.join(_placement(g) for g in m.instance_groups)}" for m in step_models)
        raise BuildError(
            f"{where}: its steps run on different devices or instance kinds ({found}); a fused model runs every "
            "step in one process: give the steps the same instance groups, or drop fuse=True"
        )
    return FusedSpec(_fused_model(ensemble, config, placements), ensemble.steps, tuple(step_models))


def _placement(group: InstanceGroupSpec) -> str:
    return group.kind + (f" gpus {list(group.gpus)}" if group.gpus else "")


def _fused_model(
    ensemble: EnsembleSpec, config: ModelConfig, placements: set[tuple[str, tuple[int, ...]]]
) -> ModelSpec:
    where = f"ensemble '{ensemble.name}'"
    lowered = lower_config(where, ensemble.name, config, ensemble.inputs, ensemble.max_batch_size, 1)
    groups = lowered.instance_groups
    if not config.instance_groups and placements:  # the steps' device, one instance
        kind, gpus = next(iter(placements))
        groups = (InstanceGroupSpec(name=f"{ensemble.name}_0", kind=kind, count=1, gpus=gpus),)
    return ModelSpec(
        name=ensemble.name,
        inputs=ensemble.inputs,
        outputs=ensemble.outputs,
        max_batch_size=ensemble.max_batch_size,
        scheduler=lowered.scheduler,
        instance_groups=groups,
        version_policy=None,
        response_cache=lowered.response_cache,
        decoupled=False,
        strict=True,
        parameters=lowered.parameters,
        versions=(VersionSpec(version=1, infer_funcs=()),),
        warmup=lowered.warmup,
        placement=lowered.placement,
    )
