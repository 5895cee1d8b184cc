"""Recording an ``@ensemble`` body: placeholders flow through handle calls and become steps."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from ..dsl.handle import ModelHandle, handling_calls
from ..dsl.site import Site, caller_site
from ..errors import BuildError


class SymbolicTensor:
    """A tensor of an ensemble being traced: an ensemble input or a step's output."""

    def __init__(self, origin: str, producer: TracedStep | None = None):
        self.origin = origin  # the ensemble input's name, or the producing model's output name
        self.producer = producer
        self.user_name: str | None = None

    def named(self, name: str) -> SymbolicTensor:
        """Choose the ensemble tensor's name (default: ``<model>_<output>``)."""
        self.user_name = name
        return self

    def __repr__(self) -> str:
        where = f"{self.producer.handle.name}." if self.producer else "input "
        return f"<tensor {where}{self.origin}>"

    def __bool__(self) -> bool:
        raise BuildError(
            f"{self!r} has no value while an ensemble is traced: an ensemble body cannot branch on data. "
            "Use a BLS model (a served callable that calls handles) for conditional pipelines"
        )


@dataclasses.dataclass(eq=False)
class TracedStep:
    handle: ModelHandle
    inputs: dict[str, SymbolicTensor]
    outputs: dict[str, SymbolicTensor] = dataclasses.field(default_factory=dict)
    site: Site | None = None  # the line of the body that called the handle


class StepOutputs(Mapping[str, SymbolicTensor]):
    """What a handle call returns while tracing: index it by output name."""

    def __init__(self, step: TracedStep, names: tuple[str, ...]):
        self._step = step
        self._names = names

    def __getitem__(self, name: str) -> SymbolicTensor:
        if name not in self._names:
            raise BuildError(
                f"model '{self._step.handle.name}' has no output '{name}'; its outputs are {list(self._names)}"
            )
        if name not in self._step.outputs:
            self._step.outputs[name] = SymbolicTensor(name, self._step)
        return self._step.outputs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __bool__(self) -> bool:
        raise BuildError(
            f"the outputs of model '{self._step.handle.name}' have no value while an ensemble is traced: an "
            "ensemble body cannot branch on data. Use a BLS model for conditional pipelines"
        )

    def __len__(self) -> int:
        return len(self._names)


class Tracer:
    def __init__(
        self, ensemble: str, output_names: tuple[str, ...], outputs_of: Mapping[str, tuple[str, ...]] | None = None
    ):
        self.ensemble = ensemble
        self.steps: list[TracedStep] = []
        self._output_names = output_names
        # Each model's output names as lowered: an ONNX model's come from its graph, not its declaration.
        self._outputs_of = outputs_of or {}

    def call(self, handle: ModelHandle, inputs: dict[str, Any]) -> StepOutputs:
        for name, value in inputs.items():
            if not isinstance(value, SymbolicTensor):
                raise BuildError(
                    f"input '{name}' of model '{handle.name}' is a {type(value).__name__}; ensemble steps take only "
                    "tensors of the ensemble (constants belong in the composing model)"
                )
        step = TracedStep(handle, dict(inputs), site=caller_site())
        self.steps.append(step)
        names = self._outputs_of.get(handle.name)
        if names is None:
            names = tuple(t.name or f"OUTPUT_{i}" for i, t in enumerate(handle.definition.outputs or (), 1))
        return StepOutputs(step, names)


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[Tracer]:
    """Every handle called in this context becomes one of ``tracer``'s steps."""
    with handling_calls(tracer.call):
        yield tracer
