"""Where a model's tensors live: ``ModelConfig(tensors=...)`` and python_backend's input parameter, lowered once.

A model whose callable takes a framework's tensors lets Triton leave its inputs where they were made
(FORCE_CPU_ONLY_INPUT_TENSORS "no", unless the user set the parameter), so that a GPU tensor from an
ensemble step or a BLS caller arrives without a copy; emit writes that parameter, the runtime reads
the placement from the model's record, and the generated straight-line ``execute`` serves only models
that take numpy arrays from host memory.
"""

from __future__ import annotations

import importlib.util
import re
import types
from typing import Any

from ..errors import BuildError
from ..runtime.dtypes import BF16
from ..runtime.tensors import FORCE_CPU_ONLY_INPUT_TENSORS, NUMPY
from .spec import InstanceGroupSpec, IOSpec, PlacementSpec

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_GPU_ONLY = ("cupy",)  # frameworks whose tensors live on a GPU only


def lower_placement(
    where: str,
    tensors: Any,
    inputs: tuple[IOSpec, ...],
    groups: tuple[InstanceGroupSpec, ...],
    parameters: tuple[tuple[str, str], ...],
) -> tuple[PlacementSpec, tuple[tuple[str, str], ...]]:
    """The model's placement and its parameters, FORCE_CPU_ONLY_INPUT_TENSORS "no" added for a framework model."""
    framework = _framework_name(where, tensors)
    if framework in _GPU_ONLY:
        cpu = [group.name for group in groups if group.kind != "KIND_GPU"]
        if cpu:
            raise BuildError(
                f"{where}: tensors={framework!r} holds tensors on a GPU only, but instance group(s) {cpu} run on the "
                f'CPU; give the model instance_groups=[InstanceGroup(kind="KIND_GPU")], or take tensors="torch"'
            )
    if framework != NUMPY:
        _check_importable(where, framework)
    if framework == NUMPY:
        bf16 = [t.name for t in inputs if t.data_type == BF16]
        if bf16:
            raise BuildError(
                f'{where}: input(s) {bf16} are BF16, which numpy cannot hold; declare ModelConfig(tensors="torch") '
                "to receive them as torch.bfloat16 tensors, or declare them float16/float32"
            )
    given = dict(parameters).get(FORCE_CPU_ONLY_INPUT_TENSORS)
    if given is None and framework != NUMPY:
        parameters = tuple(sorted((*parameters, (FORCE_CPU_ONLY_INPUT_TENSORS, "no"))))
        given = "no"
    return PlacementSpec(tensors=framework, inputs_anywhere=given == "no"), parameters


def _framework_name(where: str, tensors: Any) -> str:
    name = tensors.__name__ if isinstance(tensors, types.ModuleType) else tensors
    if not isinstance(name, str) or not _MODULE.match(name):
        raise BuildError(
            f'{where}: tensors must be "numpy", "torch", "cupy" or the name of an array-API module, found {tensors!r}'
        )
    return name


def _check_importable(where: str, name: str) -> None:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BuildError(
            f"{where}: tensors={name!r}, but no module {name!r} can be imported where repogen builds; install it "
            "here (the build ships it inside the repository, or records it for an image that provides it)"
        )
