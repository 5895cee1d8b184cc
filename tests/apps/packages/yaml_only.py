"""One model importing PyYAML (a dependency of repogen itself, so every build venv has it).

Small enough for build-only tests of shipping: a few MB of wheels per container Python.
"""

import numpy as np
import yaml

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def parse(text):
    return {"n": np.array([[len(yaml.safe_load(t.decode()) or {})] for t in text[:, 0]], dtype=np.int64)}


models.bind(
    "Yaml",
    infer_func=parse,
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="n", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
