"""A fused ensemble: ``fuse=True`` compiles the pipeline into one Python model.

    repogen build tests/golden/fused/app.py:models -o build/fused

``Normalize`` is one Python-backend model whose payload carries both steps' callables and configs
(``model.json`` lists them under ``fused``); it runs ``Shift`` then ``Scale`` in-process, each
through the same conversion as when served alone, so it answers as the ensemble Triton would
schedule, with no server round trip between the steps. What a step ships lands under
``Normalize/1/steps/<step>/<version>/files/``. The steps stay in the repository as models of their own.
``@batch`` functions get a ``model.py`` whose ``execute`` is specialized to their signature, and
a fused ensemble whose every step is one (``Energy``) gets its steps written out in its ``model.py``:
each function called in turn, each result checked inline as the step's own model would check it.
"""

import numpy as np

from repogen import ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
BATCHED = ModelConfig(max_batch_size=16)


class Shift:
    def __init__(self, context: ModelContext):
        with open(context.path("offset.txt"), encoding="utf-8") as file:
            self.offset = np.float32(file.read())

    @batch
    def __call__(self, x):
        return {"y": x - self.offset}


shift = models.bind("Shift", infer_func=Shift, inputs=X, outputs=Y, config=BATCHED, files=["offset.txt"])


@models.model("Scale", inputs=X, outputs=Y, config=BATCHED, strict=True)
@batch
def scale(x):
    return {"y": x * np.float32(4)}


@models.ensemble("Normalize", inputs=X, outputs=Y, config=BATCHED, fuse=True)
def normalize(x):
    return {"y": scale(x=shift(x=x)["y"])["y"]}


@models.model("Square", inputs=X, outputs=Y, config=BATCHED)
@batch
def square(x):
    return {"y": x * x}


@models.ensemble("Energy", inputs=X, outputs=Y, config=BATCHED, fuse=True)
def energy(x):
    return {"y": square(x=scale(x=x)["y"])["y"]}
