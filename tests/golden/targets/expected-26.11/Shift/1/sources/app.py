"""One repository built for three releases: 23.10 (Python 3.10), 24.11 (the first on Ubuntu 24.04, Python
3.12, CUDA 12) and 26.11 (Python 3.12, CUDA 13).

    repogen build tests/golden/targets/app.py:models -o out --triton-version 23.10   # expected-23.10/
    repogen build tests/golden/targets/app.py:models -o out --triton-version 24.11   # expected-24.11/
    repogen build tests/golden/targets/app.py:models -o out --triton-version 26.11   # expected-26.11/

What differs is what a build records about its target: ``target`` (image, tritonserver, Python,
numpy) and ``pythons`` in every model.json and in the manifest. The configs and model.py files are
the same for every release: repogen emits no config field newer than 23.10, so a repository moves
between releases as far as its Python allows.
"""

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()
VECTOR = [Tensor(name="x", dtype=np.float32, shape=(-1,))]


@models.model(
    "Scale",
    inputs=VECTOR,
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=16, batcher=DynamicBatcher(max_queue_delay_microseconds=200)),
)
@batch
def scale(x):
    return {"y": x * 2}


class Offset:
    """A class model: constructed in each instance, as the server loads it."""

    def __init__(self):
        self.offset = np.float32(1.5)

    @batch
    def __call__(self, y):
        return {"z": y + self.offset}


shift = models.bind(
    "Shift",
    infer_func=Offset,
    inputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="z", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=16),
)


@models.ensemble(
    "Pipeline",
    inputs=VECTOR,
    outputs=[Tensor(name="z", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=16),
)
def pipeline(x):
    return shift(y=scale(x=x)["y"])
