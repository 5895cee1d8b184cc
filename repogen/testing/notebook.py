"""Jupyter cells replayed as IPython runs them, for tests of models defined in a notebook.

IPython compiles each cell under a made-up file name (``<ipython-input-2-...>``), keeps its text only in
``linecache`` and runs it in one namespace, ``__main__``'s. Nothing else of Jupyter matters to a build: the cells'
sources are found through ``linecache`` and shipped as ``sources/cells/<name>.py``.
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence
from typing import Any

__all__ = ["cell_filename", "run_cells"]


def cell_filename(number: int) -> str:
    """The made-up file name IPython gives cell ``number``."""
    return f"<ipython-input-{number}-5e1f0c2a9b7d>"


def run_cells(cells: Sequence[str], namespace: dict[str, Any], first: int = 1) -> None:
    """Register each cell's text in linecache, compile it under its cell's name and run it in ``namespace`` (one
    shared by every cell, with ``__name__`` ``"__main__"``). ``first``: the number of the first cell, so that a
    notebook replayed in parts keeps each cell's own name."""
    for number, cell in enumerate(cells, start=first):
        filename = cell_filename(number)
        linecache.cache[filename] = (len(cell), None, cell.splitlines(keepends=True), filename)
        # dont_inherit: a cell starts with no __future__ flags (this module's annotations import is not the cell's)
        exec(compile(cell, filename, "exec", dont_inherit=True), namespace)  # noqa: S102
