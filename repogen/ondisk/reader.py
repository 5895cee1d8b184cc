"""Reading a model repository as tritonserver sees it: the one reader of a built repository.

``validate`` (reports what is wrong), ``inspect`` (describes what is there), ``diff`` (compares the
files), ``serve`` and ``deploy`` (read what they need) all read through here, so they agree on what
counts as a model, a version, a parse failure, a ``model.json`` and the manifest. Lenient readers
(:func:`model_dirs`) describe whatever is there; :func:`read_repository` is strict and raises
:class:`~repogen.errors.RepositoryError` naming the file and the fix.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from ..errors import RepositoryError
from ..hashing import sha256_file
from ..packages.options import canonical
from ..runtime.contract import CONFIG_FILE, MANIFEST_FILE, METADATA_FILE, Manifest, Metadata, is_version_name
from ..runtime.contract.package_trees import PACKAGES_DIR
from ..triton.gpus import gpu_shortfall
from ..triton.proto import model_config_pb2 as mc
from ..triton.server_options import (
    POOL_FLAG,
    ServerOption,
    ServerSettings,
    gpu_batch_bytes,
    gpu_groups,
    gpus_needed,
    server_options,
)

__all__ = [
    "CONFIG_FILE",
    "BuiltRepository",
    "ConfigError",
    "ModelDir",
    "files",
    "is_version_name",
    "load_json",
    "model_dirs",
    "parse_config",
    "read_manifest",
    "read_repository",
    "require_directory",
    "sha256",
]

_LOCATION = re.compile(r"^\d+:\d+ : ")


sha256 = sha256_file  # the name the tools use


@dataclass(frozen=True)
class ConfigError:
    """Why a ``config.pbtxt`` did not parse; ``line`` is 1-based (0 when unknown)."""

    message: str
    line: int = 0
    column: int = 0


def load_json(path: Path) -> dict[str, Any]:
    """A JSON object the build wrote (``model.json``, the manifest); :class:`RepositoryError` if it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RepositoryError(f"cannot read {path}: {exc}. Rebuild the repository with `repogen build`.") from exc
    if not isinstance(data, dict):
        raise RepositoryError(f"{path} holds {type(data).__name__}, expected a JSON object; rebuild the repository.")
    return data


@dataclass(frozen=True)
class ModelDir:
    """One subdirectory of the repository: tritonserver tries to load each one as a model."""

    name: str
    path: Path
    config: mc.ModelConfig | None = None
    error: ConfigError | None = None
    versions: tuple[int, ...] = ()
    other_dirs: tuple[str, ...] = field(default=())

    @property
    def has_config(self) -> bool:
        return (self.path / CONFIG_FILE).is_file()

    @property
    def is_ensemble(self) -> bool:
        return self.config is not None and self.config.platform == "ensemble"

    @property
    def is_python(self) -> bool:
        return self.config is not None and self.config.backend == "python"

    def metadata(self, version: int) -> dict[str, Any]:
        """``<version>/model.json`` (empty when there is none: a hand-written model)."""
        path = self.path / str(version) / METADATA_FILE
        return load_json(path) if path.is_file() else {}

    @property
    def requirements(self) -> tuple[str, ...]:
        """``dist==version`` lines the server's image must provide, sorted: recorded, and not shipped.

        A distribution the build shipped inside the version (``packages``, in every tree's lock) is
        the repository's own; the rest (``--packages record``, ``--provided``) the image must install.
        """
        return tuple(sorted({r for r, shipped in self._requirements() if not shipped}))

    @property
    def imports(self) -> tuple[str, ...]:
        """Every ``dist==version`` the payloads import, shipped or not: what building the app needs."""
        return tuple(sorted({r for r, _ in self._requirements()}))

    def _requirements(self) -> list[tuple[str, bool]]:
        found = []
        for version in self.versions:
            metadata = self.metadata(version)
            trees = [t for t in (metadata.get(Metadata.PACKAGES) or {}).values() if isinstance(t, dict)]
            locks = [{canonical(str(p.get("name", ""))) for p in t.get("lock") or []} for t in trees]
            shipped = set.intersection(*locks) if locks else set()
            for requirement in (metadata.get(Metadata.REQUIREMENTS) or {}).values():
                found.append((str(requirement), canonical(str(requirement).split("==")[0]) in shipped))
        return found

    def instance_count(self, gpus: int = 1) -> int:
        """Instances Triton starts for this model (each Python instance is one stub process).

        Ensembles have none. A group without ``count`` means one; a GPU group starts ``count``
        instances on each of its GPUs (all ``gpus`` visible ones when it names none).
        """
        config = self.config
        if config is None or config.platform == "ensemble":
            return 0
        if not config.instance_group:
            return max(gpus, 1) if config.backend != "python" else 1
        total = 0
        for group in config.instance_group:
            count = group.count or 1
            if group.kind in (mc.ModelInstanceGroup.KIND_GPU, mc.ModelInstanceGroup.KIND_AUTO) and gpus:
                count *= len(group.gpus) or gpus
            total += count
        return total

    @property
    def uses_gpu(self) -> bool:
        return self.config is not None and any(
            g.kind == mc.ModelInstanceGroup.KIND_GPU for g in self.config.instance_group
        )

    @property
    def gpus_needed(self) -> int:
        """GPUs a server must see to load this model: past the highest id a KIND_GPU group names, else one."""
        return gpus_needed(self.config) if self.config is not None else 0

    @property
    def gpu_groups(self) -> list[str]:
        """Each KIND_GPU group, named with the GPUs it names (``Scale_0 on GPUs [1]``)."""
        return [f"{g.name or 'a group'}{f' on GPUs {list(g.gpus)}' if g.gpus else ''}" for g in self._gpu_groups()]

    @property
    def gpu_batch_bytes(self) -> int | None:
        """Bytes of a full batch's inputs and outputs of a KIND_GPU model (repogen.triton.server_options)."""
        return gpu_batch_bytes(self.config) if self.config is not None else None

    def _gpu_groups(self) -> list[mc.ModelInstanceGroup]:
        return gpu_groups(self.config) if self.config is not None else []


def public_name(full_name: str) -> str:
    """Triton's spelling of a name from our schema (package ``repogen.inference`` → ``inference``)."""
    return full_name.replace("repogen.inference.", "inference.")


def parse_config(path: Path) -> tuple[mc.ModelConfig | None, ConfigError | None]:
    """Parse with the project's r24.10 schema, exactly as strictly as tritonserver does."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, ConfigError(f"is not UTF-8 text ({exc.reason} at byte {exc.start})")
    config = mc.ModelConfig()
    try:
        text_format.Parse(text, config)
    except text_format.ParseError as exc:
        message = public_name(_LOCATION.sub("", str(exc)))
        return None, ConfigError(message, exc.GetLine() or 0, exc.GetColumn() or 0)
    return config, None


def _model_dir(path: Path) -> ModelDir:
    config, error = parse_config(path / CONFIG_FILE) if (path / CONFIG_FILE).is_file() else (None, None)
    versions: list[str] = []
    others: list[str] = []
    for child in sorted(path.iterdir()):
        if child.is_dir():
            (versions if is_version_name(child.name) else others).append(child.name)
    return ModelDir(
        name=path.name,
        path=path,
        config=config,
        error=error,
        versions=tuple(sorted(int(v) for v in versions)),
        other_dirs=tuple(others),
    )


def model_dirs(repository: Path) -> list[ModelDir]:
    """Every subdirectory, sorted by name. Hidden ones (``.git``) are skipped as most tools do."""
    return [_model_dir(p) for p in sorted(repository.iterdir()) if p.is_dir() and not p.name.startswith(".")]


def files(root: Path) -> dict[str, Path]:
    """Regular files under ``root`` by POSIX relative path, without ``__pycache__`` (the server writes those).

    Shipped package trees (``<version>/packages/<tag>/``) are left out: thousands of files that are
    checked as a whole, by their digest (:func:`repogen.ondisk.integrity.tree_problems`); their listing files are kept.
    """
    found = {}
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        if here.name == PACKAGES_DIR and is_version_name(here.parent.name):
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in names:
            path = here / name
            if path.is_file():
                found[path.relative_to(root).as_posix()] = path
    return dict(sorted(found.items()))


def read_manifest(repository: Path) -> dict[str, Any] | None:
    """``repogen.manifest.json`` at the root; None for a repository repogen did not write."""
    path = repository / MANIFEST_FILE
    return load_json(path) if path.is_file() else None


def require_directory(path: str | Path) -> Path:
    """``path`` as a :class:`Path`, or :class:`RepositoryError` saying how to make a repository there."""
    root = Path(path)
    if not root.is_dir():
        raise RepositoryError(
            f"model repository {root} is not a directory; build one first: repogen build APP -o {root}"
        )
    return root


@dataclass(frozen=True)
class BuiltRepository:
    """What ``serve`` and ``deploy`` need of a repository: its models (every config parsed) and manifest."""

    path: Path
    models: tuple[ModelDir, ...]
    manifest: dict[str, Any] = field(default_factory=dict)
    """``repogen.manifest.json``; empty for a hand-written repository."""
    requirements: tuple[str, ...] = ()
    """The third-party requirements the image must install (recorded, not shipped), deduplicated and sorted."""
    imports: tuple[str, ...] = ()
    """Every third-party distribution the payloads import, shipped or not (building the app needs them all)."""

    @property
    def build(self) -> dict[str, str]:
        """Versions the build recorded (``python``, ``numpy``, ``cloudpickle``); empty if unknown."""
        return {k: str(v) for k, v in (self.manifest.get("build") or {}).items()}

    @property
    def portable(self) -> bool:
        """Payloads ship source (any Python from 3.10 loads them) rather than bytecode (``--pin-python``)."""
        return bool(self.manifest.get("portable", False))

    @property
    def pythons(self) -> tuple[str, ...]:
        """The container Pythons the build checked its sources against."""
        return tuple(str(p) for p in self.manifest.get("pythons") or ())

    def python_instances(self, gpus: int = 1) -> int:
        return sum(m.instance_count(gpus) for m in self.models if m.is_python)

    @property
    def uses_gpu(self) -> bool:
        return any(m.uses_gpu for m in self.models)

    @property
    def gpus_needed(self) -> int:
        """GPUs a server must see to load every model (0 without KIND_GPU ones)."""
        return max((m.gpus_needed for m in self.models), default=0)

    @property
    def gpu_batch_bytes(self) -> int:
        """Every KIND_GPU model's full batches at once, where their shapes say (models.gpu_batch_bytes)."""
        return sum(m.gpu_batch_bytes or 0 for m in self.models)

    def gpu_server_args(self) -> list[str]:
        """tritonserver's arguments for the GPU path: a CUDA memory pool per GPU the models use where their tensors
        outgrow the default 64 MB (:func:`repogen.triton.gpus.cuda_pool_args`); none without GPU models."""
        return [o.arg for o in self.server_options if o.flag == POOL_FLAG]

    @property
    def server_settings(self) -> ServerSettings:
        """What the build recorded of its server beyond the configs (none for a hand-written repository)."""
        return ServerSettings.from_record((self.manifest.get(Manifest.SERVER) or {}).get("settings"))

    @property
    def server_options(self) -> list[ServerOption]:
        """Every tritonserver option the models depend on (repogen.triton.server_options), read from their configs
        and the settings the build recorded: what ``serve`` and every deploy target start tritonserver with."""
        configs = {m.name: m.config for m in self.models if m.config is not None}
        return server_options(configs, self.server_settings)

    def server_args(self) -> list[str]:
        """:attr:`server_options` as tritonserver's arguments (``--flag=value``)."""
        return [option.arg for option in self.server_options]

    def gpu_shortfalls(self, visible: int) -> list[str]:
        """For each model needing more GPUs than ``visible``: why a server with that many fails to load it."""
        found = [gpu_shortfall(m.name, m.gpus_needed, m.gpu_groups, visible) for m in self.models if m.gpus_needed]
        return [message for message in found if message]


def read_repository(path: str | Path) -> BuiltRepository:
    """Every model of a built repository with its config parsed; :class:`RepositoryError` on anything unreadable."""
    root = require_directory(path)
    models = [m for m in model_dirs(root) if m.has_config]
    if not models:
        raise RepositoryError(
            f"{root} holds no model (no <model>/{CONFIG_FILE}); expected a repository written by "
            f"`repogen build APP -o {root}`."
        )
    for model in models:
        if model.config is None:
            error = model.error or ConfigError("")
            where = f"line {error.line}: " if error.line else ""
            raise RepositoryError(
                f"model {model.name!r}: cannot parse {model.path / CONFIG_FILE} ({where}{error.message}); expected a "
                f"Triton {CONFIG_FILE}. Rebuild the repository, or run `repogen validate` on it."
            )
    requirements = tuple(sorted({r for m in models for r in m.requirements}))
    imports = tuple(sorted({r for m in models for r in m.imports}))
    return BuiltRepository(root, tuple(models), read_manifest(root) or {}, requirements, imports)
