"""Reading a model repository as tritonserver sees it: model directories, configs, versions.

Shared by ``validate`` (which reports what is wrong) and ``inspect`` (which describes what is
there), so both agree on what counts as a model, a version and a parse failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import text_format

from ..hashing import sha256_file
from ..triton.proto import model_config_pb2 as mc

CONFIG = "config.pbtxt"

_LOCATION = re.compile(r"^\d+:\d+ : ")


@dataclass(frozen=True)
class ConfigError:
    """Why a ``config.pbtxt`` did not parse; ``line`` is 1-based (0 when unknown)."""

    message: str
    line: int = 0
    column: int = 0


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
        return (self.path / CONFIG).is_file()

    @property
    def is_ensemble(self) -> bool:
        return self.config is not None and self.config.platform == "ensemble"


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


def is_version_name(name: str) -> bool:
    """tritonserver loads ``1``, ``2``, ... and ignores (with a log warning) ``01`` or ``v1``."""
    return name.isdigit() and (name == "0" or not name.startswith("0"))


def _model_dir(path: Path) -> ModelDir:
    config, error = parse_config(path / CONFIG) if (path / CONFIG).is_file() else (None, None)
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
    """Regular files under ``root`` by POSIX relative path, without ``__pycache__`` (the server writes those)."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and "__pycache__" not in relative.parts:
            found[relative.as_posix()] = path
    return found


sha256 = sha256_file  # the name the tools use
