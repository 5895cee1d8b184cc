"""Where the user declared something: the ``file:line`` every build-time error about it starts with.

``bind``, ``@models.model``, ``@models.ensemble``, ``models.onnx``/``torchscript``/``tensorrt``/``include``
record the innermost frame outside repogen's own package (for a decorator: the decorator's line, as KFP
reports a component at its decorated line), so a mistake found later, while lowering, tracing or pickling,
is reported where it was written rather than somewhere in repogen.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path
from types import FrameType

_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep


_CELL = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")
"""The name IPython compiles cell N under (a notebook's own kernel may give a file under /tmp instead: a path)."""


@dataclasses.dataclass(frozen=True)
class Site:
    file: str  # absolute, or IPython's name of a notebook cell
    line: int

    def __str__(self) -> str:
        cell = _CELL.match(self.file)
        if cell:  # as IPython's tracebacks name it
            return f"Cell In[{cell.group(1)}], line {self.line}"
        return f"{shown(self.file)}:{self.line}"

    @property
    def in_cell(self) -> bool:
        """Whether it is a notebook cell's line (its file is no path)."""
        return _CELL.match(self.file) is not None


def shown(path: str | os.PathLike[str]) -> str:
    """``app.py`` under the working directory, the absolute path elsewhere (either one an editor opens)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative


def user_frame() -> FrameType | None:
    """The innermost frame of the call stack whose code is not repogen's own."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_ours(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def caller_site() -> Site | None:
    """Where the user's code called into repogen (None when no frame of theirs is on the stack)."""
    frame = user_frame()
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    if _CELL.match(filename):
        return Site(filename, frame.f_lineno)
    if filename.startswith("<"):
        return None
    return Site(str(Path(filename).resolve()), frame.f_lineno)


def traceback_site(exc: BaseException) -> Site | None:
    """The innermost frame of ``exc``'s traceback whose code is not repogen's (the user's line that failed)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith("<") and not _is_ours(filename):
            found = Site(str(Path(filename).resolve()), tb.tb_lineno)
        tb = tb.tb_next
    return found


def _is_ours(filename: str) -> bool:
    return str(Path(filename).resolve()).startswith(_PACKAGE)
