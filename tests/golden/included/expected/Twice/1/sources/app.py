"""An existing model directory taken in as it is: ``models.include`` copies a hand-written Python-backend
model (``handmade/``: its config.pbtxt and 1/model.py) beside a generated one, and hashes its files into
the manifest. The config is parsed with repogen's schema; a field the targeted releases do not know
fails the build. ``Twice`` calls it through BLS like any model of the repository.
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor

models = Repository()

handmade = models.include("Handmade", "handmade")


@models.model(
    "Twice",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=0),
)
def twice(requests):
    return [{"y": handmade(x=handmade(x=request["x"])["y"])["y"]} for request in requests]
