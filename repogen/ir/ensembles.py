"""Tracing ``@ensemble`` bodies into validated ensemble steps.

Every check Triton would make when loading the ensemble (and a few it would make only at
request time) happens here, so a broken pipeline never reaches the server.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..dsl.repository import EnsembleDefinition, Repository
from ..errors import BuildError
from .spec import EnsembleSpec, StepSpec, TensorSpec
from .tracing import SymbolicTensor, TracedStep, Tracer, tracing


@dataclasses.dataclass(frozen=True)
class Interface:
    """What a step needs to know about the model it calls."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    max_batch_size: int

    def input(self, name: str) -> TensorSpec | None:
        return next((t for t in self.inputs if t.name == name), None)

    def output(self, name: str) -> TensorSpec | None:
        return next((t for t in self.outputs if t.name == name), None)


def lower_ensemble(
    repository: Repository,
    definition: EnsembleDefinition,
    interface: Interface,
    interfaces: Mapping[str, Interface],
) -> EnsembleSpec:
    where = f"ensemble '{definition.name}'"
    tracer = Tracer(definition.name, tuple(t.name for t in interface.outputs))
    placeholders = {t.name: SymbolicTensor(t.name) for t in interface.inputs}
    with tracing(tracer):
        try:
            result = definition.func(**placeholders)
        except BuildError as exc:
            raise BuildError(f"{where}: {exc}") from None
        except Exception as exc:
            raise BuildError(
                f"{where}: tracing its body raised {type(exc).__name__}: {exc}; an ensemble body may only call "
                "model handles with keyword tensors, index their outputs by name and return a dict"
            ) from exc
    specs: dict[SymbolicTensor | str, TensorSpec] = {t.name: t for t in interface.inputs}
    for step in tracer.steps:
        _check_step(repository, where, step, interface, interfaces, specs)
    returned = _check_result(where, result, interface, specs)
    _check_inputs_used(where, tracer.steps, placeholders)
    names = _name_tensors(where, tracer.steps, placeholders, returned, interface)
    steps = []
    for step in tracer.steps:
        used = {name: tensor for name, tensor in step.outputs.items() if tensor in names}
        if not used:
            raise BuildError(
                f"{where}: the step calling model '{step.handle.name}' produces nothing the ensemble uses; "
                "remove the call or use one of its outputs"
            )
        steps.append(
            StepSpec(
                model=step.handle.name,
                input_map=tuple(sorted((k, names[v]) for k, v in step.inputs.items())),
                output_map=tuple(sorted((k, names[v]) for k, v in used.items())),
            )
        )
    return EnsembleSpec(
        name=definition.name,
        inputs=interface.inputs,
        outputs=interface.outputs,
        max_batch_size=interface.max_batch_size,
        steps=tuple(steps),
    )


def _check_step(
    repository: Repository,
    where: str,
    step: TracedStep,
    interface: Interface,
    interfaces: Mapping[str, Interface],
    specs: dict[SymbolicTensor | str, TensorSpec],
) -> None:
    handle = step.handle
    if handle.repository is not repository or handle.name not in interfaces:
        raise BuildError(
            f"{where} calls model '{handle.name}', which is not in this repository; bind it to the same "
            "Repository as the ensemble"
        )
    callee = interfaces[handle.name]
    label = f"{where}, step '{handle.name}'"
    unknown = sorted(set(step.inputs) - {t.name for t in callee.inputs})
    if unknown:
        raise BuildError(f"{label}: no input named {unknown}; its inputs are {[t.name for t in callee.inputs]}")
    missing = [t.name for t in callee.inputs if not t.optional and t.name not in step.inputs]
    if missing:
        raise BuildError(f"{label}: input(s) {missing} are left unmapped; pass them as keyword tensors")
    if interface.max_batch_size > callee.max_batch_size:
        raise BuildError(
            f"{label}: the ensemble's max_batch_size={interface.max_batch_size} exceeds the model's "
            f"max_batch_size={callee.max_batch_size}; lower the ensemble's or raise the model's"
        )
    for name, tensor in step.inputs.items():
        consumer = callee.input(name)
        producer = _spec_of(tensor, specs, interfaces)
        assert consumer is not None
        _check_compatible(label, f"input '{name}'", producer, consumer, tensor)
    for name, tensor in step.outputs.items():
        output = callee.output(name)
        assert output is not None
        specs[tensor] = output


def _spec_of(
    tensor: SymbolicTensor, specs: dict[SymbolicTensor | str, TensorSpec], interfaces: Mapping[str, Interface]
) -> TensorSpec:
    if tensor.producer is None:
        return specs[tensor.origin]
    if tensor not in specs:  # produced by a step recorded later: the body used it before calling it
        raise BuildError(f"{tensor!r} is used before the step that produces it")
    return specs[tensor]


def _check_compatible(label: str, what: str, producer: TensorSpec, consumer: TensorSpec, tensor: Any) -> None:
    if producer.data_type != consumer.data_type:
        raise BuildError(
            f"{label}: {what} expects {consumer.data_type} but {tensor!r} is {producer.data_type}; make the "
            "producer and consumer agree on the dtype"
        )
    dims_ok = len(producer.dims) == len(consumer.dims) and all(
        a == b or a == -1 or b == -1 for a, b in zip(producer.dims, consumer.dims, strict=True)
    )
    if not dims_ok:
        raise BuildError(
            f"{label}: {what} expects shape {list(consumer.dims)} but {tensor!r} has shape {list(producer.dims)}"
        )


def _check_result(
    where: str, result: Any, interface: Interface, specs: dict[SymbolicTensor | str, TensorSpec]
) -> dict[str, SymbolicTensor]:
    declared = [t.name for t in interface.outputs]
    if not isinstance(result, Mapping):
        raise BuildError(
            f"{where}: the body must return a dict of its outputs {declared}, found {type(result).__name__}"
        )
    extra = sorted(set(result) - set(declared))
    if extra:
        raise BuildError(f"{where}: returns {extra}, which are not declared outputs {declared}")
    returned: dict[str, SymbolicTensor] = {}
    for output in interface.outputs:
        tensor = result.get(output.name)
        if not isinstance(tensor, SymbolicTensor) or tensor.producer is None:
            found = "an ensemble input" if isinstance(tensor, SymbolicTensor) else repr(tensor)
            raise BuildError(
                f"{where}: output '{output.name}' is never produced by a step (found {found}); return a model "
                "output for it"
            )
        if tensor in returned.values():
            raise BuildError(
                f"{where}: {tensor!r} is returned as two outputs; Triton maps one model output to one ensemble tensor"
            )
        _check_compatible(where, f"output '{output.name}'", specs[tensor], output, tensor)
        returned[output.name] = tensor
    return returned


def _check_inputs_used(where: str, steps: Sequence[TracedStep], placeholders: dict[str, SymbolicTensor]) -> None:
    used = {id(t) for step in steps for t in step.inputs.values()}
    unused = [name for name, tensor in placeholders.items() if id(tensor) not in used]
    if unused:
        raise BuildError(f"{where}: input(s) {unused} are not used by any step; Triton rejects unused ensemble inputs")


def _name_tensors(
    where: str,
    steps: Sequence[TracedStep],
    placeholders: dict[str, SymbolicTensor],
    returned: dict[str, SymbolicTensor],
    interface: Interface,
) -> dict[SymbolicTensor, str]:
    """Ensemble tensor names: inputs and outputs keep theirs, intermediates get chosen or derived ones."""
    names: dict[SymbolicTensor, str] = {tensor: name for name, tensor in placeholders.items()}
    names.update({tensor: name for name, tensor in returned.items()})
    taken = set(names.values())
    intermediates = [t for step in steps for t in step.outputs.values() if t not in names and _consumed(t, steps)]
    for tensor in intermediates:
        if tensor.user_name is not None:
            if tensor.user_name in taken:
                raise BuildError(
                    f"{where}: intermediate tensor name '{tensor.user_name}' ({tensor!r}) collides with another "
                    "tensor of the ensemble; choose a unique name with .named(...)"
                )
            names[tensor] = tensor.user_name
            taken.add(tensor.user_name)
    for tensor in intermediates:
        if tensor in names:
            continue
        assert tensor.producer is not None
        base = f"{tensor.producer.handle.name}_{tensor.origin}"
        name, k = base, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        names[tensor] = name
        taken.add(name)
    return names


def _consumed(tensor: SymbolicTensor, steps: Sequence[TracedStep]) -> bool:
    return any(tensor is t for step in steps for t in step.inputs.values())


def find_cycle(edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle in the ensemble → composing-model graph, as a path, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, ()):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if state.get(nxt) is None and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if state.get(node) is None and (cycle := visit(node)):
            return cycle
    return None
