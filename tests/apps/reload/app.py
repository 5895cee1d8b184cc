"""Two models from two modules, for `repogen serve --reload`: editing edited.py changes only Edited's files."""

import numpy as np
from edited import edited
from stable import stable

from repogen import ModelConfig, Repository, Tensor

models = Repository()

for _name, _fn in (("Stable", stable), ("Edited", edited)):
    models.bind(
        _name,
        infer_func=_fn,
        inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
        outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
        config=ModelConfig(max_batch_size=8),
    )
