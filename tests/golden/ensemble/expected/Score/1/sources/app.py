"""Ensembles: a function over model handles, traced once at build time into Triton's scheduling.

    repogen build tests/golden/ensemble/app.py:models -o build/ensemble

``Pipeline`` becomes a ``platform: "ensemble"`` config: Triton passes tensors from ``Normalize``
to ``Score`` itself, with no Python in between. The body runs on placeholders, so it may only
call handles and index their outputs by name; ``.named("unit")`` picks the name of the tensor
between the steps (the default is ``<model>_<output>``). ``Report`` nests it: an ensemble is a
model like any other, so another ensemble's step may call it.
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()

VECTOR = Tensor(name="x", dtype=np.float32, shape=(4,))
SCORE = Tensor(name="score", dtype=np.float32, shape=(1,))


@models.model(
    "Normalize",
    inputs=[VECTOR],
    outputs=[Tensor(name="unit", dtype=np.float32, shape=(4,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def normalize(x):
    return {"unit": x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)}


@models.model(
    "Score",
    inputs=[Tensor(name="v", dtype=np.float32, shape=(4,))],
    outputs=[SCORE],
    config=ModelConfig(max_batch_size=8),
)
@batch
def score(v):
    return {"score": (v * np.arange(1, 5, dtype=np.float32)).sum(axis=1, keepdims=True)}


@models.ensemble("Pipeline", inputs=[VECTOR], outputs=[SCORE], config=ModelConfig(max_batch_size=8))
def pipeline(x):
    unit = normalize(x=x)["unit"].named("unit")
    return {"score": score(v=unit)["score"]}


@models.ensemble(
    "Report",
    inputs=[VECTOR],
    outputs=[SCORE, Tensor(name="unit", dtype=np.float32, shape=(4,))],
    config=ModelConfig(max_batch_size=4),
)
def report(x):
    return {"score": pipeline(x=x)["score"], "unit": normalize(x=x)["unit"]}
