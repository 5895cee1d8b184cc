"""The files of one model or ensemble (relative path → entry), and the pieces fused models reuse.

Generated files are bytes; a file of the user's (a network, a shipped file) is a :class:`FileCopy`,
hashed here in chunks and copied by the writer, never read whole. ``assemble.py`` assembles these
maps with the manifest; the writer makes the build atomic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import BuildError
from ..hashing import Entry, FileCopy
from ..ir.spec import EnsembleSpec, ModelSpec, NetworkSpec, RepositorySpec, VersionSpec
from ..runtime.contract import CONFIG_FILE, GPU, METADATA_FILE, MODEL_FILE, NUMPY, PAYLOAD_FILE, Metadata, dumps
from ..version import __version__
from .model_config import ensemble_config, label_file, model_config, to_text
from .model_source import model_py
from .onnx_model_source import onnx_model_py
from .payloads import PayloadPlan, PayloadUnit
from .templates import render
from .vendoring import vendored_files

MADE_ON_GPU = "made_on_gpu"
"""``model.json``'s callables that held CUDA tensors at build time, and where their instances run
(``ir/gpu_instances.py``): ``{"callable", "at", "devices", "runs"}``. For the user to read (``repogen inspect``); the
runtime never does."""

ENSEMBLE_PLACEHOLDER = ".keep"


def emit_ensemble(ensemble: EnsembleSpec) -> dict[str, Entry]:
    """The config, and an empty version directory (kept by a placeholder file, as git would need)."""
    return {
        f"{ensemble.name}/{CONFIG_FILE}": to_text(ensemble_config(ensemble)).encode("utf-8"),
        f"{ensemble.name}/1/{ENSEMBLE_PLACEHOLDER}": b"",
    }


def model_units(model: ModelSpec) -> list[PayloadUnit]:
    """What each version of ``model`` pickles: its callables, one per instance."""
    units = []
    for version in model.versions:
        what = f"model '{model.name}'" + (f" version {version.version}" if len(model.versions) > 1 else "")
        funcs = version.infer_funcs
        labels = ["infer_func"] if len(funcs) == 1 else [f"infer_func[{i}]" for i in range(len(funcs))]
        callables = tuple(zip(labels, funcs, strict=True))
        obj = {"infer_funcs": list(funcs)}
        apart = len(funcs) > 1
        units.append(
            PayloadUnit(model.name, version.version, what, obj, callables, version.clients, version.imports, apart)
        )
    return units


def emit_model(model: ModelSpec, plan: PayloadPlan) -> dict[str, Entry]:
    """The config and every version directory, with the payloads ``plan`` pickled."""
    files = model_files(model)
    for version in model.versions:
        record = {Metadata.CALLS: list(version.calls)}
        files.update(version_files(model, version, plan, record))
        files.update(plan.place(model.name, version.version))
        for name, source in model.files:
            files.update(shipped(f"{model.name}/{version.version}/files/{name}", source))
        for name, source in version.files:
            beside(files, shipped(f"{model.name}/{version.version}/{name}", source), f"model '{model.name}'")
    return files


def emit_network(network: NetworkSpec) -> dict[str, Entry]:
    """Triton's standard layout for an exported network: the config, each version's graph file and the external
    data files an ONNX graph names (``location=``), beside it as the graph expects them."""
    files: dict[str, Entry] = {f"{network.name}/{CONFIG_FILE}": network_config(network)}
    for version, source in network.graphs:
        files[f"{network.name}/{version}/{network.filename}"] = FileCopy.of(source)
    for version, location, source in network.external:
        beside(files, {f"{network.name}/{version}/{location}": FileCopy.of(source)}, f"model '{network.name}'")
    return files


def beside(files: dict[str, Entry], more: dict[str, Entry], where: str) -> None:
    """Add ``more`` (a graph's external data, files shipped into the version directory), replacing nothing."""
    taken = sorted(set(more) & set(files))
    if taken:
        raise BuildError(
            f"{where}: {taken[0]} would replace a file of that name the build writes there; rename the file (for "
            "an ONNX graph's external data: save it under another location=)"
        )
    files.update(more)


def model_files(model: ModelSpec) -> dict[str, Entry]:
    """The model-level files: config.pbtxt and the labels of classification outputs."""
    files: dict[str, Entry] = {f"{model.name}/{CONFIG_FILE}": config_text(model)}
    for index, output in enumerate(model.outputs):
        if output.labels:
            files[f"{model.name}/{label_file(index)}"] = ("\n".join(output.labels) + "\n").encode("utf-8")
    return files


def config_text(model: ModelSpec, backend: str = "python", platform: str = "") -> bytes:
    """A model's ``config.pbtxt`` (a Python model's unless ``backend`` or ``platform`` say otherwise)."""
    return to_text(model_config(model, backend, platform)).encode("utf-8")


def network_config(network: NetworkSpec) -> bytes:
    return config_text(network.model, network.backend, network.platform)


def configs(spec: RepositorySpec) -> dict[str, bytes]:
    """Model name -> ``config.pbtxt`` of every model and exported network (a ``--model-version`` merge's)."""
    found = {model.name: config_text(model) for model in spec.models}
    return found | {network.name: network_config(network) for network in spec.networks}


def version_files(
    model: ModelSpec, version: VersionSpec, plan: PayloadPlan, record: dict[str, Any], source: bytes | None = None
) -> dict[str, Entry]:
    """One version directory: model.py, the payload, its sources, model.json and the part of the runtime it reaches
    (``vendoring.py``).

    ``source`` is a ``model.py`` emitted elsewhere (a fused model's); by default it is emitted here.
    """
    base = f"{model.name}/{version.version}"
    payload = plan.payload(model.name, version.version)
    metadata = {
        **plan.metadata(model.name, version.version),
        **record,
        Metadata.MODEL: model.name,
        Metadata.STRICT: model.strict,
        Metadata.VERSION: version.version,
    }
    if model.placement.tensors != NUMPY:
        metadata[Metadata.TENSORS] = model.placement.tensors
    if model.max_concurrency is not None:
        metadata[Metadata.CONCURRENCY] = model.max_concurrency
    if model.placement.output_memory == GPU and model.on_gpu:
        metadata[Metadata.OUTPUT_MEMORY] = GPU
    if model.made_on_gpu:
        metadata[MADE_ON_GPU] = [
            {"callable": m.callable, "at": m.at, "devices": list(m.devices), "runs": m.runs} for m in model.made_on_gpu
        ]
    if source is None:
        source = onnx_model_py(model, version) or model_py(model, version)
    files: dict[str, Entry] = {
        f"{base}/{MODEL_FILE}": source,
        f"{base}/{PAYLOAD_FILE}": payload.data,
        f"{base}/{METADATA_FILE}": dumps(metadata),
        **{f"{base}/{path}": data for path, data in payload.shipped.items()},
        f"{base}/repogen/__init__.py": render("repogen_init.py.tmpl", repogen_version=__version__),
    }
    carried = vendored_files(
        model, version.infer_funcs, metadata, source, payload.data, payload.imports, payload.shipped.values()
    )
    for path, data in carried.items():
        files[f"{base}/{path}"] = data
    return files


def shipped(destination: str, source: Path) -> dict[str, Entry]:
    """A shipped file, or every file under a shipped directory, sorted: each copied by the writer."""
    if source.is_file():
        return {destination: FileCopy.of(source)}
    return {
        f"{destination}/{path.relative_to(source).as_posix()}": FileCopy.of(path)
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
