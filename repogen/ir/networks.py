"""Lowering exported networks (``models.onnx``): the graph's tensors, checked against any declaration.

The graph is the truth the server will check the config against when it loads the model; a
declaration that disagrees would only fail there, so it fails the build here, naming the model,
the tensor, what was declared, what the graph has and the fix. ``backend="python"`` lowers to a
Python model whose callable runs the graph through onnxruntime (shipped with the repository);
``backend="onnxruntime"`` to a :class:`NetworkSpec` that Triton's own backend serves.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from pathlib import Path

from ..dsl.config import ModelConfig
from ..dsl.repository import ONNX_BACKENDS, NetworkDefinition
from ..errors import BuildError, GraphMismatchError
from ..runtime.contract import GRAPH_FILE
from ..runtime.onnx_session import OnnxSession
from ..triton.dtypes import NUMPY_DTYPES
from ..triton.onnx_graph import Graph, GraphTensor, read_graph
from .config import lower_config
from .spec import IOSpec, ModelSpec, NetworkSpec, VersionSpec
from .tensors import lower_tensors, max_batch_size
from .versions import lower_version_policy

ONNXRUNTIME = "onnxruntime"


def lower_network(name: str, definitions: Sequence[NetworkDefinition]) -> ModelSpec | NetworkSpec:
    """Every version of one ONNX model; they share one config, so their graphs must have the same tensors."""
    first = definitions[0]
    where = f"model '{name}'"
    if first.backend not in ONNX_BACKENDS:
        raise BuildError(
            f"{where}: backend={first.backend!r} is not one of {list(ONNX_BACKENDS)}; use 'onnxruntime' (Triton's "
            "onnxruntime backend) or 'python' (onnxruntime inside the Python backend, for servers without it)"
        )
    config = check_definitions(where, definitions)
    batch = max_batch_size(where, config)
    graphs = _graphs(where, definitions)
    configs = [
        (
            version,
            _tensors(where, "input", first.inputs, graph.inputs, batch, _path(definitions, version).name),
            _tensors(where, "output", first.outputs, graph.outputs, batch, _path(definitions, version).name),
        )
        for version, graph in graphs
    ]
    _, inputs, outputs = configs[0]
    for version, other_inputs, other_outputs in configs[1:]:
        if (other_inputs, other_outputs) != (inputs, outputs):
            raise GraphMismatchError(
                f"{where}: version {version} ({_path(definitions, version).name}) has "
                f"{_describe(other_inputs, other_outputs)}, but version {configs[0][0]} "
                f"({_path(definitions, configs[0][0]).name}) has {_describe(inputs, outputs)}; versions share one "
                "config.pbtxt, so give this graph another model name, or declare inputs=/outputs= that fit both"
            )
    python = first.backend == "python"
    if python:
        _require_onnxruntime(where)
    external = tuple(
        (version, location, _external(where, _path(definitions, version), location))
        for version, graph in graphs
        for location in graph.external
    )
    versions = tuple(
        VersionSpec(
            version=version,
            infer_funcs=(OnnxSession,) if python else (),
            files=((GRAPH_FILE, _path(definitions, version)), *((loc, p) for v, loc, p in external if v == version))
            if python
            else (),
            imports=(ONNXRUNTIME,) if python else (),
        )
        for version, _ in graphs
    )
    model = network_model(where, name, config, inputs, outputs, batch, versions, python)
    if python:
        return model
    return NetworkSpec(model=model, backend=ONNXRUNTIME, filename=GRAPH_FILE, graphs=tuple(
        (version, _path(definitions, version)) for version, _ in graphs
    ), external=external)  # fmt: skip


def _external(where: str, graph: Path, location: str) -> Path:
    """An external data file of ``graph``: beside it (where onnxruntime looks, relative to the graph), present."""
    parts = location.split("/")
    if location.startswith("/") or "\\" in location or any(p in ("", ".", "..") for p in parts):
        raise BuildError(
            f"{where}: the graph ({graph.name}) keeps tensor data in {location!r}, which is not a path inside its "
            "directory; the server loads it from beside model.onnx, so save the graph with its data beside it "
            "(onnx.save(model, path, save_as_external_data=True, location='weights.data'))"
        )
    path = graph.parent.joinpath(*parts)
    if not path.is_file():
        raise BuildError(
            f"{where}: the graph ({graph.name}) keeps tensor data in {location!r} (external data), but {path} does "
            "not exist; put that file beside the graph, or save the graph with its data inside it"
        )
    return path


def network_model(
    where: str,
    name: str,
    config: ModelConfig,
    inputs: tuple[IOSpec, ...],
    outputs: tuple[IOSpec, ...],
    batch: int,
    versions: tuple[VersionSpec, ...],
    python: bool,
) -> ModelSpec:
    """The config part of an exported network's model (its versions hold no callables unless ``python``)."""
    if config.tensors != "numpy":
        raise BuildError(
            f"{where}: tensors={config.tensors!r} is for a Python callable; an exported network's inputs are read by "
            "its backend (onnxruntime takes numpy arrays). Leave tensors out"
        )
    lowered = lower_config(where, name, config, inputs, batch, 1)
    # Without instance groups Triton's own backends start one instance per visible GPU (CPU when none):
    # a default written here would pin a network to the CPU. A Python model's stub is a CPU process.
    groups = lowered.instance_groups if python or config.instance_groups else ()
    return ModelSpec(
        name=name,
        inputs=inputs,
        outputs=outputs,
        max_batch_size=batch,
        scheduler=lowered.scheduler,
        instance_groups=groups,
        version_policy=lower_version_policy(where, config.version_policy, list(versions)),
        response_cache=lowered.response_cache,
        decoupled=False,
        strict=False,
        parameters=lowered.parameters,
        versions=versions,
        warmup=lowered.warmup,
    )


def check_definitions(where: str, definitions: Sequence[NetworkDefinition]) -> ModelConfig:
    """Versions of one model share one config: declared identically, with a config an exported network can have."""
    first = definitions[0]
    for definition in definitions[1:]:
        if (definition.inputs, definition.outputs, definition.config, definition.backend, definition.kind) != (
            first.inputs,
            first.outputs,
            first.config,
            first.backend,
            first.kind,
        ):
            raise BuildError(
                f"{where} is declared more than once with different inputs, outputs, config or backend; versions "
                "of one model share one config.pbtxt, so declare them identically or use another model name"
            )
    config = first.config
    if not isinstance(config, ModelConfig):
        raise BuildError(f"{where}: config must be a repogen.ModelConfig, found {type(config).__name__}")
    if config.decoupled:
        raise BuildError(
            f"{where}: an exported network answers each request once; remove decoupled=True from its config"
        )
    return config


def _describe(inputs: tuple[IOSpec, ...], outputs: tuple[IOSpec, ...]) -> str:
    def one(tensors: tuple[IOSpec, ...]) -> str:
        return ", ".join(f"'{t.name}' {t.data_type} {list(t.dims)}" for t in tensors)

    return f"inputs {one(inputs)} and outputs {one(outputs)}"


def _graphs(where: str, definitions: Sequence[NetworkDefinition]) -> list[tuple[int, Graph]]:
    numbers = version_numbers(where, definitions)
    return sorted(
        ((n, read_graph(d.path, where)) for n, d in zip(numbers, definitions, strict=True)), key=lambda i: i[0]
    )


def version_numbers(where: str, definitions: Sequence[NetworkDefinition]) -> list[int]:
    """Each definition's model_version, checked: integers >= 1, none twice."""
    numbers = []
    for definition in definitions:
        version = definition.version
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise BuildError(f"{where}: model_version must be an integer >= 1, found {version!r}")
        numbers.append(version)
    if len(set(numbers)) != len(numbers):
        twice = sorted(n for n in numbers if numbers.count(n) > 1)[0]
        raise BuildError(
            f"{where} is declared twice with model_version={twice}; give each its own model name or model_version"
        )
    return numbers


def _path(definitions: Sequence[NetworkDefinition], version: int) -> Path:
    return next(d.path for d in definitions if d.version == version)


def _tensors(
    where: str, kind: str, declared: Sequence[object] | None, graph: tuple[GraphTensor, ...], batch: int, source: str
) -> tuple[IOSpec, ...]:
    """The config's tensors: the graph's (batch axis removed), or the declaration once it agrees with them."""
    by_name = {t.name: t for t in graph}
    if declared is None:
        return tuple(_from_graph(where, kind, t, batch, source) for t in graph)
    specs = lower_tensors(where, kind, declared, allow_optional=kind == "input")  # type: ignore[arg-type]
    names = [spec.name for spec in specs]
    for spec in specs:
        if spec.name not in by_name:
            raise GraphMismatchError(
                f"{where}: {kind} '{spec.name}' is declared, but the graph ({source}) has no {kind} of that name; "
                f"its {kind}s are {list(by_name)}. Rename the Tensor, or leave {kind}s= out to take the graph's"
            )
        _agree(where, kind, spec, by_name[spec.name], batch, source)
    missing = [name for name in by_name if name not in names]
    if kind == "input" and missing:
        raise GraphMismatchError(
            f"{where}: the graph ({source}) has input(s) {missing} that are not declared; declare every input of "
            f"the graph ({list(by_name)}), or leave inputs= out to take the graph's"
        )
    return specs


def _model_dims(
    where: str, kind: str, tensor: GraphTensor, batch: int, source: str
) -> tuple[str, tuple[int, ...] | None]:
    """The graph tensor's data type and its dims without the batch axis (None: the graph gives no shape)."""
    label = f"{where}: {kind} '{tensor.name}' of the graph ({source})"
    if tensor.data_type is None:
        raise GraphMismatchError(
            f"{label} has {tensor.found or 'no element type'}, which no Triton tensor can carry; export the graph "
            "with tensor inputs and outputs of a numeric, bool or string type"
        )
    if tensor.dims is None or not batch:
        return tensor.data_type, tensor.dims
    if not tensor.dims or tensor.dims[0] != -1:
        found = list(tensor.dims) if tensor.dims else "a scalar"
        raise GraphMismatchError(
            f"{label} has dims {found}: with max_batch_size={batch} its first dim is the batch axis and must be "
            "symbolic (-1); export the graph with a dynamic batch axis, or set max_batch_size=0"
        )
    return tensor.data_type, tensor.dims[1:]


def _from_graph(where: str, kind: str, tensor: GraphTensor, batch: int, source: str) -> IOSpec:
    """A graph tensor as Triton's config states it; a scalar (per sample) is dims [1] reshaped to []."""
    data_type, dims = _model_dims(where, kind, tensor, batch, source)
    if dims is None:
        raise GraphMismatchError(
            f"{where}: {kind} '{tensor.name}' of the graph ({source}) has no shape; declare the {kind}s with "
            f"{kind}s=[Tensor(name=..., dtype=..., shape=...)]"
        )
    if not dims:
        return IOSpec(tensor.name, data_type, (1,), reshape=())
    return IOSpec(tensor.name, data_type, dims)


def _agree(where: str, kind: str, declared: IOSpec, tensor: GraphTensor, batch: int, source: str) -> None:
    """Same data type; the shape the model sees (``reshape`` if declared, else dims) fits the graph's."""
    data_type, dims = _model_dims(where, kind, tensor, batch, source)
    seen = declared.reshape if declared.reshape is not None else declared.dims
    if declared.data_type == data_type and (dims is None or _dims_agree(seen, dims)):
        return
    shape = "any shape" if dims is None else f"{list(dims)}"
    if dims is None or dims:
        fix = (
            f"Tensor(name={declared.name!r}, dtype={_dtype(data_type)}, shape={tuple(seen if dims is None else dims)})"
        )
    else:
        fix = f"Tensor(name={declared.name!r}, dtype={_dtype(data_type)}, shape=(1,), reshape=())"
    raise GraphMismatchError(
        f"{where}: {kind} '{declared.name}' is declared as {declared.data_type} {list(seen)}, but the graph "
        f"({source}) has {data_type} {shape}" + (" (dims without the batch axis)" if batch else "") + f". Declare "
        f"{fix}, or leave {kind}s= out to take the graph's"
    )


def _dims_agree(declared: tuple[int, ...], graph: tuple[int, ...]) -> bool:
    """A fixed graph dim must be declared as is; a symbolic one (-1) accepts any declared size."""
    return len(declared) == len(graph) and all(g == -1 or d == g for d, g in zip(declared, graph, strict=True))


def _dtype(data_type: str) -> str:
    if data_type == "TYPE_STRING":
        return "bytes"
    dtype = NUMPY_DTYPES.get(data_type)
    return f"np.{dtype.name}" if dtype is not None else repr(data_type.removeprefix("TYPE_").lower())


def _require_onnxruntime(where: str) -> None:
    """backend="python" ships the builder's onnxruntime; without one installed there is nothing to ship."""
    if importlib.metadata.packages_distributions().get(ONNXRUNTIME):
        return
    raise BuildError(
        f"{where}: backend='python' runs the graph through onnxruntime, shipped inside the repository from the "
        "environment that builds it, but no installed distribution provides onnxruntime here; `pip install "
        "onnxruntime` where repogen build runs (or use backend='onnxruntime' on a server with that backend)"
    )
