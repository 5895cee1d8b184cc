"""A model importing a distribution the serving image provides (``--provided tinylib``), not the repository.

``tinylib==1.0+cpu`` stands in for ``torch==2.13.0+cpu``: a build with a local version label that no
default index has. tests/containers/test_provided_image.py makes its wheel, serves it from a package
index on 127.0.0.1, builds this app with it installed, and plays the Dockerfile ``repogen deploy
--docker --index-url ...`` writes on a stand-in NGC image.
"""

from __future__ import annotations

import numpy as np
import tinylib

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Triple",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,)), Tensor(name="origin", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
)
@batch
def triple(x):
    origin = np.array([[tinylib.ORIGIN.encode()]] * len(x), dtype=object)
    return {"y": tinylib.scale(x), "origin": origin}
