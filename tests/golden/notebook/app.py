"""A notebook: models defined in Jupyter cells and built through the library API.

    python tests/golden/notebook/app.py build/notebook

Jupyter compiles each cell under a made-up file name (``<ipython-input-2-...>``, or
``/tmp/ipykernel_<pid>/<hash>.py`` in newer kernels) and keeps its text only in ``linecache``;
there is no app file for ``repogen build`` to load. Calling ``build_repository(models, path)``
in a cell builds what the session defined: each cell the models' code comes from is shipped as
``sources/cells/<name>.py`` and compiled by the server's Python, like any other source. This
script replays the cells below the way IPython runs them: one shared ``__main__`` namespace,
each cell's text in ``linecache`` under its made-up name.
"""

import sys

from repogen.testing.notebook import run_cells

CELLS = [
    # In [1]:
    """
import numpy as np
from repogen import ModelConfig, Repository, Tensor, batch, build_repository

models = Repository()
OFFSET = np.float32(7)
""",
    # In [2]:
    """
@models.model(
    "Shift",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def shift(x):
    return {"y": x + OFFSET}
""",
    # In [3]:
    """
def describe(requests):
    match len(requests):  # the server's own Python compiles this cell's source
        case 0:
            return []
        case _:
            return [{"summary": np.array([f"{r['x'].size} values".encode()], dtype=object)} for r in requests]


models.bind(
    "Describe",
    infer_func=describe,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="summary", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False),
)
""",
    # In [4]:
    """
build_repository(models, OUTPUT)
""",
]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTPUT_DIRECTORY")
    run_cells(CELLS, {"__name__": "__main__", "OUTPUT": sys.argv[1]})
