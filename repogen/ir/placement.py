"""Where a model's tensors live: ``ModelConfig(tensors=..., output_memory=...)`` and python_backend's input
parameter, lowered once.

A model whose callable takes a framework's tensors lets Triton leave its inputs where they were made
(FORCE_CPU_ONLY_INPUT_TENSORS "no", unless the user set the parameter) where a GPU producer exists, so that a GPU
tensor from an ensemble step or a BLS caller arrives without a copy; a GPU instance's outputs go where their
readers take them. Emit writes the parameter and records ``output_memory``, the runtime reads the placement from the
model's record, and the generated straight-line ``execute`` serves only models that take numpy arrays from host
memory.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import types
from typing import Any

from ..errors import BuildError
from ..runtime.contract import BF16, FORCE_CPU_ONLY_INPUT_TENSORS, GPU, HOST, NUMPY
from .spec import EnsembleSpec, InstanceGroupSpec, IOSpec, ModelSpec, NetworkSpec, PlacementSpec

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_GPU_ONLY = ("cupy",)  # frameworks whose tensors live on a GPU only


def lower_placement(
    where: str,
    tensors: Any,
    inputs: tuple[IOSpec, ...],
    groups: tuple[InstanceGroupSpec, ...],
    parameters: tuple[tuple[str, str], ...],
    output_memory: Any = None,
) -> tuple[PlacementSpec, tuple[tuple[str, str], ...]]:
    """The model's placement and its parameters as the user gave them; :func:`settle_transfers` completes both
    once the whole repository is known (who produces the model's inputs, who reads its outputs)."""
    if output_memory not in (None, HOST, GPU):
        raise BuildError(
            f'{where}: output_memory must be "host" (GPU outputs copied to host memory once a batch, for clients over '
            f'HTTP or gRPC), "gpu" (left on the GPU, for readers there) or None (the build decides), found '
            f"{output_memory!r}"
        )
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
    placement = PlacementSpec(
        tensors=framework,
        inputs_anywhere=given == "no",
        output_memory=output_memory,
        inputs_given=given is not None,
    )
    return placement, parameters


def settle_transfers(
    models: list[ModelSpec], ensembles: list[EnsembleSpec], networks: list[NetworkSpec]
) -> list[ModelSpec]:
    """Each model's transfers, decided from the repository it is built into (runtime/transfers.py).

    Its GPU outputs stay on the GPU (``output_memory="gpu"``) where a reader there takes them: a Triton-scheduled
    ensemble step or a BLS caller that takes a framework's tensors on a GPU instance (or an exported network on
    one); everywhere else they go to host memory once a batch, as a network client reads them. A model taking a
    framework's tensors lets Triton leave its inputs on a GPU (FORCE_CPU_ONLY_INPUT_TENSORS "no") only where a
    producer there exists; HTTP and gRPC inputs arrive in host memory either way. What the user set stays.
    """
    on_gpu = {m.name: m.on_gpu and m.placement.tensors != NUMPY for m in models}
    makes_gpu = {m.name: m.on_gpu for m in models}  # any GPU instance may return GPU tensors
    for network in networks:
        on_gpu[network.name] = makes_gpu[network.name] = network.model.on_gpu
    gpu_read: set[str] = set()
    gpu_made: set[str] = set()
    for ensemble in ensembles:
        made = {tensor: step.model for step in ensemble.steps for _, tensor in step.output_map}
        for step in ensemble.steps:
            for _, tensor in step.input_map:
                producer = made.get(tensor)
                if producer is None:
                    continue
                if on_gpu.get(step.model):
                    gpu_read.add(producer)
                if makes_gpu.get(producer):
                    gpu_made.add(step.model)
    for caller in models:
        for client in (c for version in caller.versions for c in version.clients):
            if client.memory == "gpu" or (client.memory is None and on_gpu[caller.name]):
                gpu_read.add(client.model)
            if on_gpu[caller.name]:
                gpu_made.add(client.model)
    return [_settled(model, model.name in gpu_read, model.name in gpu_made) for model in models]


def _settled(model: ModelSpec, gpu_reader: bool, gpu_producer: bool) -> ModelSpec:
    placement, parameters = model.placement, model.parameters
    output_memory = placement.output_memory or (GPU if gpu_reader else HOST)
    anywhere = placement.inputs_anywhere
    if not placement.inputs_given and placement.tensors != NUMPY and gpu_producer:
        parameters = tuple(sorted((*parameters, (FORCE_CPU_ONLY_INPUT_TENSORS, "no"))))
        anywhere = True
    placement = dataclasses.replace(placement, output_memory=output_memory, inputs_anywhere=anywhere)
    return dataclasses.replace(model, placement=placement, parameters=parameters)


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
