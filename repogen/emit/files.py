"""IR → the complete file map of a repository: relative path → bytes, before anything is written.

Keeping emission pure (no disk I/O) lets the writer make the build atomic and lets tests compare
outputs without touching the file system.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np

from ..ir.spec import ModelSpec, RepositorySpec, VersionSpec
from ..version import __version__
from . import pickling, requirements
from .model_config import label_file, model_config, to_text
from .templates import cloudpickle_files, render, runtime_files

MANIFEST = "repogen.manifest.json"
PAYLOAD = "model.pkl"
METADATA = "model.json"  # read by runtime/payload.py, which cannot import this module


def build_environment() -> dict[str, str]:
    return {
        "cloudpickle": cloudpickle.__version__,
        "numpy": np.__version__,
        "python": "{}.{}".format(*sys.version_info[:2]),
    }


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def emit_repository(spec: RepositorySpec, roots: Sequence[str] = ()) -> dict[str, bytes]:
    """Every file of the repository, including the root manifest of their hashes."""
    files: dict[str, bytes] = {}
    for model in spec.models:
        files.update(emit_model(model, roots))
    files[MANIFEST] = _json(
        {
            "build": build_environment(),
            "files": {path: _sha256(data) for path, data in sorted(files.items())},
            "format": 1,
            "models": [m.name for m in spec.models],
            "repogen": __version__,
        }
    )
    return dict(sorted(files.items()))


def emit_model(model: ModelSpec, roots: Sequence[str] = ()) -> dict[str, bytes]:
    files = {f"{model.name}/config.pbtxt": to_text(model_config(model)).encode("utf-8")}
    for index, output in enumerate(model.outputs):
        if output.labels:
            files[f"{model.name}/{label_file(index)}"] = ("\n".join(output.labels) + "\n").encode("utf-8")
    for version in model.versions:
        files.update(_emit_version(model, version, roots))
    return files


def _emit_version(model: ModelSpec, version: VersionSpec, roots: Sequence[str]) -> dict[str, bytes]:
    base = f"{model.name}/{version.version}"
    payload, modules = pickling.dumps({"infer_funcs": list(version.infer_funcs)}, roots)
    metadata = {
        "build": build_environment(),
        "format": 1,
        "model": model.name,
        "payload": {"file": PAYLOAD, "sha256": _sha256(payload)},
        "repogen": __version__,
        "requirements": requirements.third_party(modules),
        "strict": model.strict,
        "version": version.version,
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
