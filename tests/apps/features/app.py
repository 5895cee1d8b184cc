"""Models that exercise user code in the server: a sibling helper module and a raising callable."""

import numpy as np
from helpers import normalize

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Normalize",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def normalize_model(x):
    return {"y": normalize(x)}


@models.model(
    "Fragile",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(1,))],
    config=ModelConfig(batching=False),
)
def fragile(requests):
    results = []
    for request in requests:
        x = request["x"]
        if (x < 0).any():
            raise ValueError("bad x")
        results.append({"y": np.sqrt(x)})
    return results


_CATEGORIES = {"cat", "dog", "emu"}  # a set: its pickled order must not follow the hash seed


@models.model(
    "Categories",
    inputs=[Tensor(name="word", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="known", dtype=np.bool_, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def categories(word):
    return {"known": np.array([[w.decode() in _CATEGORIES or w in {b"yak", b"gnu"}] for w in word[:, 0]])}
