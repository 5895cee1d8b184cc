"""A model importing networkx 3.5, which needs Python >= 3.11: no wheel for NGC 23.10-24.10's 3.10.

repogen build tests/apps/packages/too_new.py:models -o out   -> leaves 23.10-24.10 out, naming networkx 3.4.2
repogen build ... --all-containers                             -> refused
"""

import networkx
import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def degree(n):
    return {"edges": np.array([[networkx.path_graph(int(v)).number_of_edges()] for v in n[:, 0]], dtype=np.int64)}


models.bind(
    "Graph",
    infer_func=degree,
    inputs=[Tensor(name="n", dtype=np.int64, shape=(1,))],
    outputs=[Tensor(name="edges", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
