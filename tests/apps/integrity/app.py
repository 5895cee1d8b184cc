"""Models for the integrity tests: one to corrupt, one that claims another Python, one that needs a
package the server lacks, and numpy-2-built arrays served by numpy 1.26."""

from __future__ import annotations

import click  # installed where repogen builds, absent from the numpy-only server venv
import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

OFFSETS = np.arange(4, dtype=np.float64) * 0.5  # module-level global, pickled by value with the app

models = Repository()
_IO = {
    "inputs": [Tensor(name="x", dtype=np.float32, shape=(4,))],
    "outputs": [Tensor(name="y", dtype=np.float32, shape=(4,))],
    "config": ModelConfig(max_batch_size=8),
}


def _doubler():
    @batch
    def double(x):
        return {"y": x * 2}

    return double


for name in ("Good", "Corrupt", "OtherPython"):
    models.bind(model_name=name, infer_func=_doubler(), **_IO)


@batch
def styled(x):
    click.style("needs click at unpickling time")  # `click` is a module global: pickled by reference
    return {"y": x}


models.bind(model_name="NeedsClick", infer_func=styled, **_IO)


def _weighted():
    weights = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)  # closed over

    @batch
    def weighted(x):
        return {"y": (x * weights + OFFSETS).astype(np.float32)}

    return weighted


models.bind(model_name="Numpy2Arrays", infer_func=_weighted(), **_IO)
