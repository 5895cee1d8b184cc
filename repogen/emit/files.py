"""IR → the complete file map of a repository: relative path → bytes, before anything is written.

Keeping emission pure (no disk I/O) lets the writer make the build atomic and lets tests compare
outputs without touching the file system.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np

from ..dsl.handle import ModelHandle
from ..hashing import sha256_bytes
from ..ir.spec import EnsembleSpec, ModelSpec, RepositorySpec, VersionSpec
from ..layout import MANIFEST, METADATA
from ..runtime.bls import ModelClient
from ..version import __version__
from . import pickling, requirements
from .model_config import ensemble_config, label_file, model_config, to_text
from .templates import cloudpickle_files, render, runtime_files

ENSEMBLE_PLACEHOLDER = ".keep"
PAYLOAD = "model.pkl"


def build_environment() -> dict[str, str]:
    return {
        "cloudpickle": cloudpickle.__version__,
        "numpy": np.__version__,
        "python": "{}.{}".format(*sys.version_info[:2]),
    }


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


# Called as each model is emitted: (models done, models in all, the model's name).
Progress = Callable[[int, int, str], None]


def emit_repository(
    spec: RepositorySpec,
    roots: Sequence[str] = (),
    target: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> dict[str, bytes]:
    """Every file of the repository, including the root manifest of their hashes.

    ``target`` (the NGC container built for, from ``--target-triton``) is recorded in every
    ``model.json`` and in the manifest.
    """
    files: dict[str, bytes] = {}
    handles = _handle_reducer(spec)
    extra = {"target": target} if target is not None else {}
    total = len(spec.models) + len(spec.ensembles)
    for done, model in enumerate(spec.models, start=1):
        files.update(emit_model(model, roots, handles, extra))
        if progress is not None:
            progress(done, total, model.name)
    for done, ensemble in enumerate(spec.ensembles, start=len(spec.models) + 1):
        files.update(emit_ensemble(ensemble))
        if progress is not None:
            progress(done, total, ensemble.name)
    files[MANIFEST] = _json(
        {
            "build": build_environment(),
            "files": {path: sha256_bytes(data) for path, data in sorted(files.items())},
            "format": 1,
            "models": list(spec.names),
            "repogen": __version__,
            **extra,
        }
    )
    return dict(sorted(files.items()))


def emit_ensemble(ensemble: EnsembleSpec) -> dict[str, bytes]:
    """The config, and an empty version directory (kept by a placeholder file, as git would need)."""
    return {
        f"{ensemble.name}/config.pbtxt": to_text(ensemble_config(ensemble)).encode("utf-8"),
        f"{ensemble.name}/1/{ENSEMBLE_PLACEHOLDER}": b"",
    }


def _handle_reducer(spec: RepositorySpec) -> Callable[[Any], Any]:
    """Model handles inside a payload become BLS clients of the model they name."""
    interfaces = {m.name: (m.inputs, m.outputs, m.decoupled) for m in spec.models}
    interfaces.update({e.name: (e.inputs, e.outputs, False) for e in spec.ensembles})

    def reduce(obj: Any) -> Any:
        if not isinstance(obj, ModelHandle):
            return NotImplemented
        inputs, outputs, decoupled = interfaces[obj.name]
        types = {t.name: t.data_type for t in inputs}
        return ModelClient, (obj.name, types, tuple(t.name for t in outputs), decoupled, obj.requested)

    return reduce


def emit_model(
    model: ModelSpec,
    roots: Sequence[str] = (),
    handles: Callable[[Any], Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, bytes]:
    files = {f"{model.name}/config.pbtxt": to_text(model_config(model)).encode("utf-8")}
    for index, output in enumerate(model.outputs):
        if output.labels:
            files[f"{model.name}/{label_file(index)}"] = ("\n".join(output.labels) + "\n").encode("utf-8")
    for version in model.versions:
        files.update(_emit_version(model, version, roots, handles, extra or {}))
    return files


def _emit_version(
    model: ModelSpec,
    version: VersionSpec,
    roots: Sequence[str],
    handles: Callable[[Any], Any] | None,
    extra: dict[str, Any],
) -> dict[str, bytes]:
    base = f"{model.name}/{version.version}"
    payload, modules = pickling.dumps({"infer_funcs": list(version.infer_funcs)}, roots, handles)
    metadata = {
        "build": build_environment(),
        "calls": list(version.calls),
        "format": 1,
        "model": model.name,
        "payload": {"file": PAYLOAD, "sha256": sha256_bytes(payload)},
        "repogen": __version__,
        "requirements": requirements.third_party(modules),
        "strict": model.strict,
        "version": version.version,
        **extra,
    }
    files = {
        f"{base}/model.py": render(
            "model.py.tmpl", repogen_version=__version__, model_name=model.name, model_version=version.version
        ),
        f"{base}/{PAYLOAD}": payload,
        f"{base}/{METADATA}": _json(metadata),
        f"{base}/repogen/__init__.py": render("repogen_init.py.tmpl", repogen_version=__version__),
    }
    for path, data in runtime_files():
        files[f"{base}/repogen/{path}"] = data
    for path, data in cloudpickle_files():
        files[f"{base}/{path}"] = data
    for name, source in model.files:
        files.update(_shipped(f"{base}/files/{name}", source))
    return files


def _shipped(destination: str, source: Path) -> dict[str, bytes]:
    """A shipped file, or every file under a shipped directory, sorted."""
    if source.is_file():
        return {destination: source.read_bytes()}
    return {
        f"{destination}/{path.relative_to(source).as_posix()}": path.read_bytes()
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
