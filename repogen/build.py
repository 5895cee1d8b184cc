"""The library API behind ``repogen build``: DSL → IR → file map → disk."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .dsl.repository import Repository
from .emit import pickling
from .emit.files import emit_repository
from .emit.writer import write_repository
from .ir import RepositorySpec, lower
from .loader import load_app


@dataclasses.dataclass(frozen=True)
class BuildResult:
    output: Path
    spec: RepositorySpec
    files: tuple[str, ...]


def build_repository(
    repository: Repository,
    output: str | os.PathLike[str],
    *,
    roots: tuple[str, ...] = (),
    force: bool = False,
) -> BuildResult:
    """Compile ``repository`` into ``output`` (replaced atomically)."""
    spec = lower(repository)
    files = emit_repository(spec, roots)
    write_repository(files, Path(output), force=force)
    return BuildResult(output=Path(output), spec=spec, files=tuple(files))


def build_app(
    target: str,
    output: str | os.PathLike[str],
    *,
    app_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> BuildResult:
    """Load ``path/app.py:attr`` (or ``pkg.module:attr``) and build it; the user's modules go by value."""
    app = load_app(target, app_dir)
    pickling.register_by_value(app.local_modules)
    return build_repository(app.repository, output, roots=(str(app.app_dir),), force=force)
