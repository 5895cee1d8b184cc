"""IR → the complete file map of a repository: relative path → bytes, before anything is written.

Keeping emission pure (no disk I/O) lets the writer make the build atomic and lets tests compare
outputs without touching the file system.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import numpy as np

from ..errors import BuildError
from ..hashing import sha256_bytes
from ..ir.spec import EnsembleSpec, ModelSpec, RepositorySpec, VersionSpec
from ..runtime.bls import ModelClient
from ..runtime.payload import FORMAT
from ..triton.layout import CONFIG, MANIFEST, METADATA, MODEL_FILE
from ..triton.targets import TARGETS, Targets
from ..version import __version__
from . import diagnose, pickling, requirements, sources
from .model_config import ensemble_config, label_file, model_config, to_text
from .portability import check_grammar
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


@dataclasses.dataclass(frozen=True)
class Payloads:
    """How one build pickles: for which containers, with which shipped sources (None: pinned bytecode)."""

    targets: Targets
    roots: tuple[str, ...]
    table: sources.SourceTable | None

    @classmethod
    def create(cls, targets: Targets | None = None, roots: Sequence[str] = ()) -> Payloads:
        targets = targets or Targets(TARGETS)
        if targets.pinned:
            return cls(targets, tuple(roots), None)
        relative = pickling.relative_to(pickling.search_roots(roots))
        table = sources.SourceTable(relative, check=lambda source: check_grammar(source, targets))
        return cls(targets, tuple(roots), table)

    def record(self) -> dict[str, Any]:
        """What ``model.json`` and the manifest say about where the payloads serve."""
        target = self.targets.record()
        return {
            "portable": not self.targets.pinned,
            "pythons": list(self.targets.pythons),
            **({"target": target} if target is not None else {}),
        }


def emit_repository(
    spec: RepositorySpec,
    roots: Sequence[str] = (),
    targets: Targets | None = None,
    progress: Progress | None = None,
) -> dict[str, bytes]:
    """Every file of the repository, including the root manifest of their hashes.

    ``targets`` (every NGC container from 23.10 unless ``--target-triton`` names one) decides what
    the shipped sources and imports are checked against; it is recorded in every ``model.json``
    and in the manifest.
    """
    files: dict[str, bytes] = {}
    payloads = Payloads.create(targets, roots)
    extra = payloads.record()
    total = len(spec.models) + len(spec.ensembles)
    for done, model in enumerate(spec.models, start=1):
        files.update(emit_model(model, payloads))
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
        f"{ensemble.name}/{CONFIG}": to_text(ensemble_config(ensemble)).encode("utf-8"),
        f"{ensemble.name}/1/{ENSEMBLE_PLACEHOLDER}": b"",
    }


def _clients(version: VersionSpec) -> Callable[[Any], Any]:
    """The model handles the version's callables hold are pickled as BLS clients of the models they name."""
    clients = {id(c.reference): c for c in version.clients}

    def reduce(obj: Any) -> Any:
        client = clients.get(id(obj))
        if client is None or client.reference is not obj:
            return NotImplemented
        return ModelClient, (client.model, dict(client.input_types), client.outputs, client.decoupled, client.requested)

    return reduce


def emit_model(model: ModelSpec, payloads: Payloads | None = None) -> dict[str, bytes]:
    payloads = payloads or Payloads.create()
    files = {f"{model.name}/{CONFIG}": to_text(model_config(model)).encode("utf-8")}
    for index, output in enumerate(model.outputs):
        if output.labels:
            files[f"{model.name}/{label_file(index)}"] = ("\n".join(output.labels) + "\n").encode("utf-8")
    for version in model.versions:
        files.update(_emit_version(model, version, payloads))
    return files


def _pickle(model: ModelSpec, version: VersionSpec, payloads: Payloads) -> pickling.Pickled:
    """The version's payload; a failure names the model and, for an unpicklable part, the path to it."""
    what = f"model '{model.name}'" + (f" version {version.version}" if len(model.versions) > 1 else "")
    obj = {"infer_funcs": list(version.infer_funcs)}
    handles = _clients(version)
    try:
        return pickling.dumps(obj, payloads.roots, handles, payloads.table)
    except BuildError as exc:
        raise BuildError(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pickle raises TypeError, PicklingError, AttributeError, ...
        failure = f"{type(exc).__name__}: {exc}"

    def pickles(part: Any) -> None:
        pickling.dumps(part, payloads.roots, handles, payloads.table)

    funcs = version.infer_funcs
    culprit = next((i for i, f in enumerate(funcs) if _fails(pickles, f)), 0)
    label = "infer_func" if len(funcs) == 1 else f"infer_func[{culprit}]"
    path = " -> ".join(diagnose.locate(funcs[culprit], label, pickles))
    raise BuildError(
        f"{what}: cannot pickle {path}: {failure}. Locks, open files, sockets, threads and clients cannot travel to "
        "the server: create them there instead, in the __init__ of a class bound as the model (it runs once per "
        "instance inside the server) or lazily on the first call"
    ) from None


def _fails(pickles: Callable[[Any], None], part: Any) -> bool:
    try:
        pickles(part)
    except Exception:  # noqa: BLE001
        return True
    return False


def _emit_version(model: ModelSpec, version: VersionSpec, payloads: Payloads) -> dict[str, bytes]:
    base = f"{model.name}/{version.version}"
    pickled = _pickle(model, version, payloads)
    what = f"model '{model.name}'"
    if payloads.table is None:
        needs = requirements.third_party(pickled.modules)
    else:
        app_dir = payloads.roots[0] if payloads.roots else "(none: pass roots=(<project dir>,) to build_repository)"
        needs = requirements.account(pickled.modules, pickled.imports, payloads.targets, what, app_dir)
    shipped, listed = sources.ship(pickled.sources)
    metadata = {
        "build": build_environment(),
        "calls": list(version.calls),
        "format": FORMAT,
        "model": model.name,
        "payload": {"file": PAYLOAD, "sha256": sha256_bytes(pickled.data)},
        "repogen": __version__,
        "requirements": needs,
        "sources": listed,
        "strict": model.strict,
        "version": version.version,
        **payloads.record(),
    }
    files = {
        f"{base}/{MODEL_FILE}": render(
            "model.py.tmpl", repogen_version=__version__, model_name=model.name, model_version=version.version
        ),
        f"{base}/{PAYLOAD}": pickled.data,
        f"{base}/{METADATA}": _json(metadata),
        **{f"{base}/{path}": data for path, data in shipped.items()},
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
