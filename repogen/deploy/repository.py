"""Read back what a built repository needs at deployment time.

Deployment files are derived from the repository itself (configs, ``model.json``,
manifest), not from the user's source, so ``repogen deploy`` works on any built
directory, including one built on another machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..built.repository import parse_config
from ..triton.layout import MANIFEST
from ..triton.proto import model_config_pb2 as mc

__all__ = ["DeployError", "ModelInfo", "RepositoryInfo", "read_repository"]


class DeployError(Exception):
    """A deployment input is unusable; the message names what, what was expected and the fix."""


@dataclass(frozen=True)
class ModelInfo:
    """One model directory: its parsed config and the third-party packages its versions need."""

    name: str
    config: mc.ModelConfig
    requirements: tuple[str, ...]
    """``dist==version`` lines recorded by the build in ``<model>/<version>/model.json``."""

    @property
    def is_python(self) -> bool:
        return self.config.backend == "python"

    def instance_count(self, gpus: int = 1) -> int:
        """Instances Triton starts for this model (each Python instance is one stub process).

        Ensembles have none. A group without ``count`` means one; a GPU group starts ``count``
        instances on each of its GPUs (all ``gpus`` visible ones when it names none).
        """
        if self.config.platform == "ensemble":
            return 0
        groups = self.config.instance_group
        if not groups:
            return max(gpus, 1) if self.config.backend != "python" else 1
        total = 0
        for group in groups:
            count = group.count or 1
            if group.kind in (mc.ModelInstanceGroup.KIND_GPU, mc.ModelInstanceGroup.KIND_AUTO) and gpus:
                count *= len(group.gpus) or gpus
            total += count
        return total

    @property
    def uses_gpu(self) -> bool:
        return any(g.kind == mc.ModelInstanceGroup.KIND_GPU for g in self.config.instance_group)


@dataclass(frozen=True)
class RepositoryInfo:
    path: Path
    models: tuple[ModelInfo, ...]
    build: dict[str, str]
    """Versions the build recorded (``python``, ``numpy``, ``cloudpickle``); empty if unknown."""
    portable: bool = True
    """Payloads ship source (any Python from 3.10 loads them) rather than bytecode (``--pin-python``)."""
    pythons: tuple[str, ...] = ()
    """The container Pythons the build checked its sources against."""

    @property
    def requirements(self) -> tuple[str, ...]:
        """Every model's third-party requirements, deduplicated and sorted (deterministic output)."""
        return tuple(sorted({r for m in self.models for r in m.requirements}))

    def python_instances(self, gpus: int = 1) -> int:
        return sum(m.instance_count(gpus) for m in self.models if m.is_python)

    @property
    def uses_gpu(self) -> bool:
        return any(m.uses_gpu for m in self.models)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DeployError(f"cannot read {path}: {exc}. Rebuild the repository with `repogen build`.") from exc
    if not isinstance(data, dict):
        raise DeployError(f"{path} holds {type(data).__name__}, expected a JSON object; rebuild the repository.")
    return data


def _read_model(model_dir: Path) -> ModelInfo:
    config_path = model_dir / "config.pbtxt"
    config, error = parse_config(config_path)
    if config is None:
        where = f"line {error.line}: " if error and error.line else ""
        raise DeployError(
            f"model {model_dir.name!r}: cannot parse {config_path} ({where}{error.message if error else ''}); "
            "expected a Triton config.pbtxt. Rebuild the repository, or run `repogen validate` on it."
        )
    requirements: set[str] = set()
    for meta in sorted(model_dir.glob("[0-9]*/model.json")):
        recorded = _read_json(meta).get("requirements") or {}
        requirements.update(str(v) for v in recorded.values())
    return ModelInfo(model_dir.name, config, tuple(sorted(requirements)))


def read_repository(path: str | Path) -> RepositoryInfo:
    """Parse every ``<model>/config.pbtxt`` and ``model.json`` under a built repository."""
    root = Path(path)
    if not root.is_dir():
        raise DeployError(f"model repository {root} is not a directory; build one first: repogen build APP -o {root}")
    model_dirs = sorted(p for p in root.iterdir() if p.is_dir() and (p / "config.pbtxt").is_file())
    if not model_dirs:
        raise DeployError(
            f"{root} holds no model (no <model>/config.pbtxt); expected a repository written by "
            f"`repogen build APP -o {root}`."
        )
    manifest = _read_json(root / MANIFEST) if (root / MANIFEST).is_file() else {}
    build = {k: str(v) for k, v in (manifest.get("build") or {}).items()}
    return RepositoryInfo(
        root,
        tuple(_read_model(d) for d in model_dirs),
        build,
        portable=bool(manifest.get("portable", False)),
        pythons=tuple(str(p) for p in manifest.get("pythons") or ()),
    )
