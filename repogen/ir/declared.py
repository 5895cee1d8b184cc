"""Lowering TorchScript modules and TensorRT plans: exported networks whose tensors are declared.

repogen reads neither format (that would need torch or TensorRT at build time, and a plan is tied to
the GPU that built it), so the declaration is the config: it must be complete, and the file is copied
as it is. TorchScript gives positional tensors; Triton names an unnamed one ``INPUT__<i>`` /
``OUTPUT__<i>`` by position, and so does the build. A plan's tensors are its engine's named bindings,
so each must be named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..dsl.repository import NetworkDefinition
from ..dsl.tensor import Tensor
from ..errors import BuildError
from .networks import check_definitions, network_model, version_numbers
from .spec import NetworkSpec, VersionSpec
from .tensors import lower_tensors, max_batch_size


@dataclasses.dataclass(frozen=True)
class Kind:
    label: str  # for messages
    platform: str
    filename: str
    default_names: bool  # unnamed tensors take Triton's INPUT__<i> / OUTPUT__<i>


KINDS = {
    "torchscript": Kind("TorchScript module", "pytorch_libtorch", "model.pt", True),
    "tensorrt": Kind("TensorRT plan", "tensorrt_plan", "model.plan", False),
}


def lower_declared(name: str, definitions: Sequence[NetworkDefinition]) -> NetworkSpec:
    first = definitions[0]
    kind = KINDS[first.kind]
    where = f"model '{name}'"
    config = check_definitions(where, definitions)
    batch = max_batch_size(where, config)
    numbers = version_numbers(where, definitions)
    for definition in definitions:
        if not definition.path.is_file():
            raise BuildError(
                f"{where}: the {kind.label} {definition.path} does not exist; paths are relative to the declaring "
                "module"
            )
    inputs = lower_tensors(where, "input", _named(where, kind, "input", first.inputs))
    outputs = lower_tensors(where, "output", _named(where, kind, "output", first.outputs), allow_optional=False)
    versions = tuple(VersionSpec(version=n, infer_funcs=()) for n in sorted(numbers))
    model = network_model(where, name, config, inputs, outputs, batch, versions, python=False)
    graphs = tuple(sorted((n, d.path) for n, d in zip(numbers, definitions, strict=True)))
    return NetworkSpec(model=model, backend="", platform=kind.platform, filename=kind.filename, graphs=graphs)


def _named(where: str, kind: Kind, what: str, tensors: Sequence[Tensor] | None) -> list[Tensor]:
    if not tensors:
        raise BuildError(
            f"{where}: a {kind.label}'s tensors are not read from the file; declare its {what}s with "
            f"{what}s=[Tensor(name=..., dtype=..., shape=...)]"
        )
    named = []
    for index, tensor in enumerate(tensors):
        if isinstance(tensor, Tensor) and tensor.name is None:
            if not kind.default_names:
                raise BuildError(
                    f"{where}: {what} #{index + 1} has no name; a {kind.label}'s tensors are its engine's bindings, "
                    f"so name each Tensor as the plan does"
                )
            tensor = dataclasses.replace(tensor, name=f"{what.upper()}__{index}")
        named.append(tensor)
    return named
