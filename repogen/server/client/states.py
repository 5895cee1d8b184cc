"""What tritonserver's repository index says about each model, in one line per model.

``serve`` ends with these lines when a model fails to load (instead of leaving the cause somewhere in
70 lines of log), ``serve --reload`` prints them when a reload fails, and ``repogen status`` lists
them. The index (``tritonclient``'s ``get_model_repository_index``) gives each model's state and
Triton's reason; a Python backend reason carries the traceback after ``At:``, innermost frame first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["ModelState", "failed", "failure_lines", "model_states", "reason_line"]

_FRAME = re.compile(r"\(\d+\): ")  # a traceback frame, "app.py(16): __init__" (not load_model's closing ";")
_STATUS_PREFIX = re.compile(r"^(?:Internal|Invalid argument|Unavailable|Not found|Unknown|Unsupported): ")


@dataclass(frozen=True)
class ModelState:
    name: str
    version: str
    state: str
    """READY, UNAVAILABLE, LOADING, UNLOADING, or "" for a model the server has not been asked to load."""
    reason: str

    @property
    def failed(self) -> bool:
        return self.state == "UNAVAILABLE" and bool(self.reason) and self.reason != "unloaded"

    def line(self) -> str:
        version = f" (version {self.version})" if self.version else ""
        return f"{self.name}{version}: {reason_line(self.reason)}"


def reason_line(reason: str) -> str:
    """Triton's reason in one line: its first line without the status prefix, and the user's frame if any.

    ``load failed for model 'M': version 1 is at UNAVAILABLE state: Internal: RuntimeError: x`` (a
    failed ``load_model``) and ``Internal: RuntimeError: x\\n\\nAt:\\n  app.py(16): __init__`` (the index)
    both become ``RuntimeError: x (at app.py(16): __init__)``: the innermost frame of the user's code,
    not of repogen's runtime (``/.../repogen/runtime/context.py(135): path`` when a shipped file is missing).
    """
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    if not lines:
        return "no reason given (see the server log)"
    first = lines[0].rstrip(";")
    if " state: " in first:
        first = first.split(" state: ", 1)[1]
    first = _STATUS_PREFIX.sub("", first)
    if "At:" in lines[1:-1]:
        frames = [f for f in lines[lines.index("At:") + 1 :] if _FRAME.search(f)]  # innermost first
        mine = [f for f in frames if not f.startswith(("/", "<"))]  # shipped sources: the relative path the user wrote
        if frames:
            first += f" (at {(mine or frames)[0]})"
    return first


def model_states(index: Iterable[dict[str, Any]]) -> list[ModelState]:
    """The repository index (HTTP's list, or gRPC's ``as_json`` ``{"models": [...]}``) as states, sorted by name."""
    entries = index.get("models", []) if isinstance(index, dict) else index
    states = [
        ModelState(str(m.get("name", "")), str(m.get("version", "")), str(m.get("state", "")), str(m.get("reason", "")))
        for m in entries
    ]
    return sorted(states, key=lambda s: (s.name, s.version))


def failed(states: Iterable[ModelState], only: Iterable[str] | None = None) -> list[ModelState]:
    """The models that failed to load (among ``only`` when given)."""
    wanted = set(only) if only is not None else None
    return [s for s in states if s.failed and (wanted is None or s.name in wanted)]


def failure_lines(states: Iterable[ModelState]) -> list[str]:
    return [f"  {state.line()}" for state in states]
