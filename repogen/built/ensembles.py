"""Static checks of ``platform: "ensemble"`` models: the steps' models and the tensor wiring.

tritonserver only reports these when it loads the ensemble, one error at a time, after the
composing models loaded; checking them here finds every broken edge before anything starts.
Maps are ``{composing model's tensor: ensemble tensor}`` for both ``input_map`` and ``output_map``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..triton.proto import model_config_pb2 as mc
from .problems import Problem
from .repository import CONFIG, ModelDir


@dataclass(frozen=True)
class _Producer:
    """Who writes an ensemble tensor: an ensemble input or a step's output."""

    what: str
    data_type: int | None


def _type_name(data_type: int) -> str:
    return mc.DataType.Name(data_type)


def check_ensemble(model: ModelDir, models: Mapping[str, ModelDir]) -> list[Problem]:
    assert model.config is not None
    config, path = model.config, model.path / CONFIG
    problems: list[Problem] = []

    def report(message: str) -> None:
        problems.append(Problem.at(path, f"ensemble {model.name!r}: {message}"))

    for field in ("instance_group", "model_warmup"):
        if getattr(config, field):
            report(f"sets {field}, which ensembles cannot have (tritonserver rejects the model); remove it")
    if config.HasField("optimization"):
        report("sets optimization, which ensembles cannot have; remove it")
    steps = config.ensemble_scheduling.step
    if not steps:
        report("has no ensemble_scheduling steps; expected `ensemble_scheduling { step { model_name: ... } }`")
        return problems

    producers: dict[str, _Producer] = {
        i.name: _Producer(f"ensemble input {i.name!r}", i.data_type) for i in config.input
    }
    consumers: list[tuple[str, str, int | None]] = []  # (ensemble tensor, who reads it, expected dtype)
    for index, step in enumerate(steps, start=1):
        label = f"step {index} ({step.model_name or '<no model_name>'})"
        target = models.get(step.model_name)
        if step.model_name == model.name:
            report(f"{label} calls the ensemble itself; name a composing model")
            continue
        if target is None or not target.has_config:
            known = ", ".join(sorted(m.name for m in models.values() if m.has_config)) or "none"
            report(
                f"{label} references model {step.model_name!r}, which is not in the repository "
                f"(expected {step.model_name}/{CONFIG}; models here: {known})"
            )
            target_config = None
        else:
            target_config = target.config  # None when it failed to parse: reported on its own
            if step.model_version != -1 and step.model_version not in target.versions:
                report(
                    f"{label} pins model_version {step.model_version}, but {step.model_name} has versions "
                    f"{list(target.versions)}; use -1 (latest) or add {step.model_name}/{step.model_version}/"
                )
        inputs = {i.name: i for i in target_config.input} if target_config else {}
        outputs = {o.name: o for o in target_config.output} if target_config else {}
        for key, tensor in sorted(step.input_map.items()):
            if target_config and key not in inputs:
                hint = " (the map looks reversed: key = the composing model's input)" if tensor in inputs else ""
                report(
                    f"{label} input_map key {key!r} is not an input of {step.model_name} "
                    f"(its inputs: {', '.join(inputs) or 'none'}){hint}"
                )
                consumers.append((tensor, f"{label} input {key!r}", None))
            else:
                dtype = inputs[key].data_type if key in inputs else None
                consumers.append((tensor, f"{label} input {key!r}", dtype))
        for name, spec in inputs.items():
            if name not in step.input_map and not spec.optional:
                report(f"{label} does not map {step.model_name}'s required input {name!r}; add it to input_map")
        for key, tensor in sorted(step.output_map.items()):
            if target_config and key not in outputs:
                hint = " (the map looks reversed: key = the composing model's output)" if tensor in outputs else ""
                report(
                    f"{label} output_map key {key!r} is not an output of {step.model_name} "
                    f"(its outputs: {', '.join(outputs) or 'none'}){hint}"
                )
            if tensor in producers:
                report(f"{label} writes tensor {tensor!r}, already written by {producers[tensor].what}; rename one")
                continue
            dtype = outputs[key].data_type if key in outputs else None
            producers[tensor] = _Producer(f"{label} output {key!r}", dtype)

    read = {tensor for tensor, _, _ in consumers}
    for tensor in config.input:
        if tensor.name not in read:
            report(
                f"ensemble input {tensor.name!r} is not used by any step (tritonserver refuses the ensemble); "
                "map it in a step's input_map (as the value) or remove the input"
            )
    for output in config.output:
        consumers.append((output.name, f"ensemble output {output.name!r}", output.data_type))
    for tensor, reader, expected in consumers:
        producer = producers.get(tensor)
        if producer is None:
            report(
                f"{reader} reads tensor {tensor!r}, which nothing produces "
                "(expected an ensemble input or a step's output_map value)"
            )
        elif expected is not None and producer.data_type is not None and expected != producer.data_type:
            report(
                f"tensor {tensor!r} is {_type_name(producer.data_type)} ({producer.what}) but {reader} "
                f"expects {_type_name(expected)}; make the data types agree"
            )
    return problems
