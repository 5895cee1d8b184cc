"""A problem found in a repository: where it is and what to do about it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """``path`` is shown as the user passed the repository (so it can be pasted into an editor)."""

    path: str
    message: str
    line: int = 0
    warning: bool = False
    """Worth knowing, but the server loads the model: ``repogen validate`` still exits 0."""

    @classmethod
    def at(cls, path: Path, message: str, line: int = 0, *, warning: bool = False) -> Problem:
        return cls(str(path), message, line, warning)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"
