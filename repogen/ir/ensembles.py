"""Tracing ``@ensemble`` bodies into validated ensemble steps.

What only a traced body can get wrong (calling models of another repository, passing constants,
returning something other than its outputs) is checked here; the wiring itself by the rules of
``wiring.py``, which ``repogen validate`` applies to any ensemble too. Every check Triton would make
when loading the ensemble happens before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dsl.repository import EnsembleDefinition, Repository
from ..dsl.site import traceback_site
from ..errors import BuildError
from .sites import located
from .spec import EnsembleSpec, StepSpec
from .tracing import SymbolicTensor, TracedStep, Tracer, tracing
from .wiring import Interface, wiring_problems


def lower_ensemble(
    repository: Repository,
    definition: EnsembleDefinition,
    interface: Interface,
    interfaces: Mapping[str, Interface],
) -> EnsembleSpec:
    where = f"ensemble '{definition.name}'"
    outputs_of = {name: tuple(t.name for t in callee.outputs) for name, callee in interfaces.items()}
    tracer = Tracer(definition.name, tuple(t.name for t in interface.outputs), outputs_of)
    placeholders = {t.name: SymbolicTensor(t.name) for t in interface.inputs}
    with tracing(tracer):
        try:
            result = definition.func(**placeholders)
        except BuildError as exc:  # at the line of the body that failed
            raise located(BuildError(f"{where}: {exc}"), traceback_site(exc)) from None
        except Exception as exc:
            error = BuildError(
                f"{where}: tracing its body raised {type(exc).__name__}: {exc}; an ensemble body may only call "
                "model handles with keyword tensors, index their outputs by name and return a dict"
            )
            raise located(error, traceback_site(exc)) from exc
    for step in tracer.steps:
        if step.handle.repository is not repository or step.handle.name not in interfaces:
            error = BuildError(
                f"{where} calls model '{step.handle.name}', which is not in this repository; bind it to the same "
                "Repository as the ensemble"
            )
            raise located(error, step.site)
    returned = _check_result(where, result, interface)
    names = _name_tensors(where, tracer.steps, placeholders, returned, interface)
    steps = []
    for step in tracer.steps:
        used = {name: tensor for name, tensor in step.outputs.items() if tensor in names}
        if not used:
            error = BuildError(
                f"{where}: the step calling model '{step.handle.name}' produces nothing the ensemble uses; "
                "remove the call or use one of its outputs"
            )
            raise located(error, step.site)
        steps.append(
            StepSpec(
                model=step.handle.name,
                input_map=tuple(sorted((k, names[v]) for k, v in step.inputs.items())),
                output_map=tuple(sorted((k, names[v]) for k, v in used.items())),
            )
        )
    ensemble = EnsembleSpec(
        name=definition.name,
        inputs=interface.inputs,
        outputs=interface.outputs,
        max_batch_size=interface.max_batch_size,
        steps=tuple(steps),
    )
    problems = wiring_problems(ensemble, interfaces)
    if problems:
        raise BuildError(f"{where}: {problems[0]}")
    return ensemble


def _check_result(where: str, result: Any, interface: Interface) -> dict[str, SymbolicTensor]:
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
        returned[output.name] = tensor
    return returned


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
