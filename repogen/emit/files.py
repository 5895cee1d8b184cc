"""The files of one model or ensemble (relative path → bytes), and the pieces fused models reuse.

Emission stays pure (no disk I/O): ``repository.py`` assembles these maps with the manifest, the
writer makes the build atomic, and tests compare outputs without touching the file system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..ir.spec import EnsembleSpec, ModelSpec, NetworkSpec, VersionSpec
from ..runtime.records import Metadata, dumps
from ..triton.layout import CONFIG, METADATA, MODEL_FILE
from ..version import __version__
from .model_config import ensemble_config, label_file, model_config, to_text
from .model_source import model_py
from .payloads import PAYLOAD, Payload, Payloads, pickle_payload
from .templates import cloudpickle_files, render, runtime_files

ENSEMBLE_PLACEHOLDER = ".keep"


def emit_ensemble(ensemble: EnsembleSpec) -> dict[str, bytes]:
    """The config, and an empty version directory (kept by a placeholder file, as git would need)."""
    return {
        f"{ensemble.name}/{CONFIG}": to_text(ensemble_config(ensemble)).encode("utf-8"),
        f"{ensemble.name}/1/{ENSEMBLE_PLACEHOLDER}": b"",
    }


def emit_model(model: ModelSpec, payloads: Payloads | None = None) -> dict[str, bytes]:
    payloads = payloads or Payloads.create()
    files = model_files(model)
    for version in model.versions:
        what = f"model '{model.name}'" + (f" version {version.version}" if len(model.versions) > 1 else "")
        obj = {"infer_funcs": list(version.infer_funcs)}
        funcs = version.infer_funcs
        labels = ["infer_func"] if len(funcs) == 1 else [f"infer_func[{i}]" for i in range(len(funcs))]
        callables = list(zip(labels, funcs, strict=True))
        payload = pickle_payload(what, obj, callables, version.clients, payloads, version.imports)
        record = {Metadata.CALLS: list(version.calls)}
        files.update(version_files(model, version, payload, record))
        files.update(payloads.place(f"{model.name}/{version.version}", payload))
        for name, source in model.files:
            files.update(shipped(f"{model.name}/{version.version}/files/{name}", source))
        for name, source in version.files:
            files.update(shipped(f"{model.name}/{version.version}/{name}", source))
    return files


def emit_network(network: NetworkSpec) -> dict[str, bytes]:
    """Triton's standard layout for an exported network: the config, and each version's graph file."""
    config = model_config(network.model, backend=network.backend, platform=network.platform)
    files = {f"{network.name}/{CONFIG}": to_text(config).encode("utf-8")}
    for version, source in network.graphs:
        files[f"{network.name}/{version}/{network.filename}"] = source.read_bytes()
    return files


def model_files(model: ModelSpec) -> dict[str, bytes]:
    """The model-level files: config.pbtxt and the labels of classification outputs."""
    files = {f"{model.name}/{CONFIG}": to_text(model_config(model)).encode("utf-8")}
    for index, output in enumerate(model.outputs):
        if output.labels:
            files[f"{model.name}/{label_file(index)}"] = ("\n".join(output.labels) + "\n").encode("utf-8")
    return files


def version_files(
    model: ModelSpec, version: VersionSpec, payload: Payload, record: dict[str, Any], source: bytes | None = None
) -> dict[str, bytes]:
    """One version directory: model.py, the payload, its sources, model.json and the vendored runtime.

    ``source`` is a ``model.py`` emitted elsewhere (a fused model's); by default it is emitted here.
    """
    base = f"{model.name}/{version.version}"
    metadata = {
        **payload.metadata,
        **record,
        Metadata.MODEL: model.name,
        Metadata.STRICT: model.strict,
        Metadata.VERSION: version.version,
    }
    files = {
        f"{base}/{MODEL_FILE}": model_py(model, version) if source is None else source,
        f"{base}/{PAYLOAD}": payload.data,
        f"{base}/{METADATA}": dumps(metadata),
        **{f"{base}/{path}": data for path, data in payload.shipped.items()},
        f"{base}/repogen/__init__.py": render("repogen_init.py.tmpl", repogen_version=__version__),
    }
    for path, data in runtime_files():
        files[f"{base}/repogen/{path}"] = data
    for path, data in cloudpickle_files():
        files[f"{base}/{path}"] = data
    return files


def shipped(destination: str, source: Path) -> dict[str, bytes]:
    """A shipped file, or every file under a shipped directory, sorted."""
    if source.is_file():
        return {destination: source.read_bytes()}
    return {
        f"{destination}/{path.relative_to(source).as_posix()}": path.read_bytes()
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
