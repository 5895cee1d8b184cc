"""What ``serve`` and ``tune`` take as TARGET: a built repository, or an app they build first into scratch space.

Their scratch directory is removed however the command ends (an error, Ctrl+C during the build), except for
the one file an error message may point at (the server log).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ...errors import ServeError
from ...ondisk.reader import require_directory
from .reload import AppBuild

__all__ = ["clear_scratch", "is_app", "repository_for"]


def is_app(target: str) -> bool:
    """``path/app.py:models`` or ``package.module:models``, not a repository directory."""
    return ":" in target and not Path(target).is_dir()


def clear_scratch(scratch: Path, keep: Path | None = None) -> None:
    """Remove ``scratch``, or everything in it but ``keep`` (a file an error names) when that was written.

    Called from a ``finally``: whatever ended the command (an error, Ctrl+C during the build), nothing else stays.
    """
    if keep is None or not keep.exists():
        shutil.rmtree(scratch, ignore_errors=True)
        return
    for entry in scratch.iterdir():
        if entry != keep:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def repository_for(
    target: str, output: Path, app_dir: Path | None, echo: Callable[[str], None]
) -> tuple[Path, AppBuild | None]:
    """TARGET's repository: the directory as given, or the app built into ``output`` (in a fresh process)."""
    if not is_app(target):
        return require_directory(target), None
    build = AppBuild(target, output.resolve(), app_dir)
    echo(f"Building {target} into {build.output}...")
    failure = build.run()
    if failure is not None:
        raise ServeError(failure.removeprefix("Error: "))
    return build.output, build
