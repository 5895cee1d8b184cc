"""A class model with a shipped file: the weights load in the server, once per model instance.

    repogen build examples/classifier/app.py:models -o build/classifier

``Classifier`` is bound as a class, not an instance: each Triton instance constructs it with a
``ModelContext``, and ``context.path("weights.json")`` finds the file ``files=[...]`` shipped into
``<model>/<version>/files/``. Nothing of the weights is pickled; edit weights.json and rebuild.
"""

import json

import numpy as np

from repogen import InstanceGroup, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()


class Classifier:
    """A linear classifier whose weights and labels live in weights.json."""

    def __init__(self, context: ModelContext):
        with open(context.path("weights.json"), encoding="utf-8") as file:
            saved = json.load(file)
        self.weights = np.array(saved["weights"], dtype=np.float32)  # (features, labels)
        self.labels = np.array([label.encode() for label in saved["labels"]], dtype=object)

    @batch
    def __call__(self, features):
        scores = features @ self.weights
        best = scores.argmax(axis=1)
        return {"label": self.labels[best].reshape(-1, 1), "scores": scores}


models.bind(
    model_name="Classifier",
    infer_func=Classifier,
    inputs=[Tensor(name="features", dtype=np.float32, shape=(4,))],
    outputs=[Tensor(name="label", dtype=bytes, shape=(1,)), Tensor(name="scores", dtype=np.float32, shape=(3,))],
    config=ModelConfig(max_batch_size=32, instance_groups=[InstanceGroup(count=2, kind="KIND_CPU")]),
    files=["weights.json"],
    strict=True,
)
