"""Class models with shipped files: weights load inside the server, once per instance.

    repogen build tests/golden/class_files/app.py:models -o build/class_files

A bound class is pickled as a class, not as an instance: the server constructs it once per model
instance, passing a ``ModelContext`` when ``__init__`` takes an argument. ``files=[...]`` (paths
relative to this file; a directory is copied whole) land in ``<model>/<version>/files/``, where
``context.path(name)`` finds them; nothing of them is pickled. ``@batch`` applies to ``__call__``
like to a function. A ``factory`` builds the callable from the context instead of a class.
"""

import json

import numpy as np

from repogen import ModelConfig, ModelContext, Repository, Tensor, batch, factory

models = Repository()

WORD = [Tensor(name="word", dtype=bytes, shape=(1,))]


class Vocabulary:
    """Looks words up in ``vocab.json``, read when the instance starts."""

    def __init__(self, context: ModelContext):
        with open(context.path("vocab.json"), encoding="utf-8") as file:
            self.ids = {word.encode(): index for word, index in json.load(file).items()}
        self.where = f"{context.model_name} instance {context.instance_index} on {context.instance_kind}"

    @batch
    def __call__(self, word):
        return {"id": np.array([[self.ids.get(w, -1)] for w in word[:, 0]], dtype=np.int64)}


models.bind(
    "Vocabulary",
    infer_func=Vocabulary,
    inputs=WORD,
    outputs=[Tensor(name="id", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=8),
    files=["vocab.json"],
)


@factory
def greeter(context: ModelContext):
    with open(context.path("assets/greeting.txt"), encoding="utf-8") as file:
        template = file.read().strip()

    def greet(requests):
        return [
            {"greeting": np.array([template.format(name=r["word"][0].decode()).encode()], dtype=object)}
            for r in requests
        ]

    return greet


models.bind(
    "Greeter",
    infer_func=greeter,
    inputs=WORD,
    outputs=[Tensor(name="greeting", dtype=bytes, shape=(1,))],
    config=ModelConfig(batching=False),
    files=["assets"],
)
