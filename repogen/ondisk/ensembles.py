"""Static checks of ``platform: "ensemble"`` models: the steps' models and the tensor wiring.

tritonserver only reports these when it loads the ensemble, one error at a time, after the
composing models loaded; checking them here finds every broken edge before anything starts.
Maps are ``{composing model's tensor: ensemble tensor}`` for both ``input_map`` and ``output_map``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ir.spec import EnsembleSpec, IOSpec, StepSpec
from ..ir.wiring import Interface, wiring_problems
from ..runtime.contract import CONFIG_FILE
from ..triton.proto import model_config_pb2 as mc
from .problems import Problem
from .reader import ModelDir


def _tensors(tensors: object) -> tuple[IOSpec, ...]:
    return tuple(
        IOSpec(t.name, mc.DataType.Name(t.data_type), tuple(t.dims), optional=getattr(t, "optional", False))
        for t in tensors  # type: ignore[attr-defined]
    )


def _interface(model: ModelDir) -> Interface | None:
    """What the wiring rules need of a composing model; None when its config did not parse."""
    config = model.config
    if config is None:
        return None
    return Interface(_tensors(config.input), _tensors(config.output), config.max_batch_size)


def check_ensemble(model: ModelDir, models: Mapping[str, ModelDir]) -> list[Problem]:
    assert model.config is not None
    config, path = model.config, model.path / CONFIG_FILE
    messages: list[str] = []
    for field in ("instance_group", "model_warmup"):
        if getattr(config, field):
            messages.append(f"sets {field}, which ensembles cannot have (tritonserver rejects the model); remove it")
    if config.HasField("optimization"):
        messages.append("sets optimization, which ensembles cannot have; remove it")
    steps = config.ensemble_scheduling.step
    if not steps:
        messages.append("has no ensemble_scheduling steps; expected `ensemble_scheduling { step { model_name: ... } }`")
    for index, step in enumerate(steps, start=1):
        target = models.get(step.model_name)
        if target is not None and step.model_version != -1 and step.model_version not in target.versions:
            messages.append(
                f"step {index} ({step.model_name}) pins model_version {step.model_version}, but {step.model_name} has "
                f"versions {list(target.versions)}; use -1 (latest) or add {step.model_name}/{step.model_version}/"
            )
    ensemble = EnsembleSpec(
        name=model.name,
        inputs=_tensors(config.input),
        outputs=_tensors(config.output),
        max_batch_size=config.max_batch_size,
        steps=tuple(
            StepSpec(step.model_name, tuple(step.input_map.items()), tuple(step.output_map.items())) for step in steps
        ),
    )
    interfaces = {name: _interface(m) for name, m in models.items() if m.has_config}
    if steps:
        messages += wiring_problems(ensemble, interfaces)
    return [Problem.at(path, f"ensemble {model.name!r}: {message}") for message in messages]
