"""Two models importing PyYAML: each model version ships the same tree, hard-linked (tests/containers).

Small (a few MB of wheels per container Python), and what the deploy tests measure: whether the links
survive a Dockerfile's COPY, a tar, and KServe's file-by-file copies.
"""

import numpy as np
import yaml

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def count(text):
    return {"n": np.array([[len(yaml.safe_load(t.decode()) or {})] for t in text[:, 0]], dtype=np.int64)}


@batch
def keys(text):
    found = [",".join(sorted(map(str, yaml.safe_load(t.decode()) or {}))).encode() for t in text[:, 0]]
    return {"keys": np.array(found, dtype=object).reshape(-1, 1)}


models.bind(
    "Yaml",
    infer_func=count,
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="n", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
models.bind(
    "YamlKeys",
    infer_func=keys,
    inputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
    outputs=[Tensor(name="keys", dtype=bytes, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
