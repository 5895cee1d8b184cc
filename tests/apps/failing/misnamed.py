"""A class model that opens ``scales.npy`` but ships ``scale.npy``: its load failure must say so."""

import numpy as np

from repogen import ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()


class Scaled:
    def __init__(self, context: ModelContext):
        self.scale = np.load(context.path("scales.npy"))

    @batch
    def __call__(self, x):
        return {"y": x * self.scale}


models.bind(
    model_name="Misnamed",
    infer_func=Scaled,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
    files=["scale.npy"],
)
