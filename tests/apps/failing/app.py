"""A model whose callable fails some requests: the failures must be counted where alerts look."""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def checked(x):
    if (x > 10).any():
        raise KeyError("large")
    return {"y": x + 1}


models.bind(
    model_name="Checked",
    infer_func=checked,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
