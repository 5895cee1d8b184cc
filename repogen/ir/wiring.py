"""The rules of an ensemble's wiring: one checker for traced ensembles and for any config.pbtxt.

A step maps its model's inputs to ensemble tensors (``input_map``) and its outputs to ensemble
tensors (``output_map``). tritonserver loads an ensemble only if every step names a model, maps
every required input, writes each tensor once, reads only tensors something produces, uses every
ensemble input and agrees with its neighbours on data types and shapes; it reports the first
broken rule when it loads. The build applies these rules to a traced ``@ensemble`` before writing
anything, and ``repogen validate`` to any ensemble's config, with the same messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..triton.shapes import dims_compatible
from .spec import EnsembleSpec, IOSpec


@dataclasses.dataclass(frozen=True)
class Interface:
    """What a step needs to know about the model it calls."""

    inputs: tuple[IOSpec, ...]
    outputs: tuple[IOSpec, ...]
    max_batch_size: int
    decoupled: bool = False
    on_gpu: bool = True  # whether its outputs may be made in GPU memory (unknown: True)

    @classmethod
    def of(cls, model: Any) -> Interface:
        """The interface of a lowered model: a ModelSpec, an exported network's or an included directory's.

        A model without instance groups (an exported network's default) runs where Triton puts it: on a GPU
        where there is one; an included directory's placement is not read, so it may be on a GPU too.
        """
        groups = getattr(model, "instance_groups", None)
        on_gpu = groups is None or not groups or any(group.kind == "KIND_GPU" for group in groups)
        return cls(model.inputs, model.outputs, model.max_batch_size, model.decoupled, on_gpu)

    def input(self, name: str) -> IOSpec | None:
        return next((t for t in self.inputs if t.name == name), None)

    def output(self, name: str) -> IOSpec | None:
        return next((t for t in self.outputs if t.name == name), None)


@dataclasses.dataclass(frozen=True)
class _Written:
    """Who writes an ensemble tensor, and what it is (None: not known, its model is broken)."""

    who: str
    spec: IOSpec | None


def wiring_problems(ensemble: EnsembleSpec, interfaces: Mapping[str, Interface | None]) -> list[str]:
    """Every broken wiring rule of ``ensemble``; ``interfaces[model]`` is None for a model that exists but
    could not be read (its own problem is reported elsewhere)."""
    problems: list[str] = []
    written: dict[str, _Written] = {t.name: _Written(f"ensemble input {t.name!r}", t) for t in ensemble.inputs}
    reads: list[tuple[str, str, IOSpec | None]] = []  # (tensor, reader, what the reader expects)
    for index, step in enumerate(ensemble.steps, start=1):
        label = f"step {index} ({step.model})"
        if step.model == ensemble.name:
            problems.append(f"{label} calls the ensemble itself; name a composing model")
            continue
        if step.model not in interfaces:
            known = ", ".join(sorted(interfaces)) or "none"
            problems.append(
                f"{label} references model {step.model!r}, which is not in the repository (models here: {known})"
            )
        callee = interfaces.get(step.model)
        if callee is not None and ensemble.max_batch_size > callee.max_batch_size:
            problems.append(
                f"{label}: the ensemble's max_batch_size={ensemble.max_batch_size} exceeds the model's "
                f"max_batch_size={callee.max_batch_size}; lower the ensemble's or raise the model's"
            )
        problems += _inputs(label, step.model, dict(step.input_map), callee, reads)
        for key, tensor in step.output_map:
            spec = callee.output(key) if callee is not None else None
            if callee is not None and spec is None:
                hint = " (the map looks reversed: key = the composing model's output)" if callee.output(tensor) else ""
                names = ", ".join(t.name for t in callee.outputs) or "none"
                problems.append(f"{label} output_map key {key!r} is not an output of {step.model} ({names}){hint}")
            if tensor in written:
                problems.append(
                    f"{label} writes tensor {tensor!r}, already written by {written[tensor].who}; rename one"
                )
                continue
            written[tensor] = _Written(f"{label} output {key!r}", spec)
    read = {tensor for tensor, _, _ in reads}
    unused = [t.name for t in ensemble.inputs if t.name not in read]
    problems += [
        f"ensemble input {name!r} is not used by any step (tritonserver refuses the ensemble); map it in a step's "
        "input_map (as the value) or remove the input"
        for name in unused
    ]
    reads += [(t.name, f"ensemble output {t.name!r}", t) for t in ensemble.outputs]
    for tensor, reader, expected in reads:
        problems += _agreement(tensor, reader, expected, written.get(tensor))
    return problems


def _inputs(
    label: str,
    model: str,
    mapped: dict[str, str],
    callee: Interface | None,
    reads: list[tuple[str, str, IOSpec | None]],
) -> list[str]:
    problems = []
    for key, tensor in sorted(mapped.items()):
        spec = callee.input(key) if callee is not None else None
        if callee is not None and spec is None:
            hint = " (the map looks reversed: key = the composing model's input)" if callee.input(tensor) else ""
            names = ", ".join(t.name for t in callee.inputs) or "none"
            problems.append(f"{label} input_map key {key!r} is not an input of {model} ({names}){hint}")
        reads.append((tensor, f"{label} input {key!r}", spec))
    if callee is not None:
        missing = [t.name for t in callee.inputs if not t.optional and t.name not in mapped]
        problems += [
            f"{label} does not map {model}'s required input {name!r}; add it to input_map (in an @ensemble body: pass "
            "it as a keyword tensor)"
            for name in missing
        ]
    return problems


def _agreement(tensor: str, reader: str, expected: IOSpec | None, producer: _Written | None) -> list[str]:
    if producer is None:
        return [
            f"{reader} reads tensor {tensor!r}, which nothing produces (expected an ensemble input or a step's "
            "output_map value)"
        ]
    found = producer.spec
    if expected is None or found is None:
        return []
    if found.data_type != expected.data_type:
        return [
            f"tensor {tensor!r} is {found.data_type} ({producer.who}) but {reader} expects {expected.data_type}; "
            "make the data types agree"
        ]
    if not dims_compatible(found.dims, expected.dims):
        return [
            f"tensor {tensor!r} has shape {list(found.dims)} ({producer.who}) but {reader} expects "
            f"{list(expected.dims)}; make the shapes agree (-1 matches any size)"
        ]
    return []
