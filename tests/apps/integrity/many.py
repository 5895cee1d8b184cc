"""Thirty small models for the atomic-build tests; INTEGRITY_GENERATION changes every payload.

Each build of a different generation writes different model.pkl bytes, so a test can tell whether
the repository on disk is wholly the old build or wholly the new one.
"""

from __future__ import annotations

import os

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

COUNT = int(os.environ.get("INTEGRITY_MODELS", "30"))
GENERATION = float(os.environ.get("INTEGRITY_GENERATION", "1"))

models = Repository()


def _scaler(factor: float):
    @batch
    def scale(x):
        return {"y": (x * factor).astype(np.float32)}

    return scale


for index in range(COUNT):
    models.bind(
        model_name=f"M{index:02d}",
        infer_func=_scaler(GENERATION * 1000 + index),
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=8),
    )
