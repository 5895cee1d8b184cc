"""Tensor declarations beyond name, dtype and shape: optional inputs, reshape and labels.

    repogen build tests/golden/tensors/app.py:models -o build/tensors

* ``optional=True``: clients may leave the input out; the callable then finds it absent from the
  request. ``@fill_optionals`` gives it a default (without the batch axis), and
  ``@group_by_keys`` lets ``@batch`` merge only requests that carry the same inputs.
* ``reshape``: the shape the model sees differs from the one clients send, e.g. ``shape=(1,)``
  with ``reshape=()`` for one scalar per row (Triton's ``reshape``).
* ``labels``: Triton's classification extension; clients ask for ``class_count`` and get
  ``"score:index:label"`` strings. The labels are written to a file beside ``config.pbtxt``.
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch, fill_optionals, group_by_keys

models = Repository()

X = Tensor(name="x", dtype=np.float32, shape=(2,))


@models.model(
    "Offset",
    inputs=[X, Tensor(name="offset", dtype=np.float32, shape=(2,), optional=True)],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(2,))],
    config=ModelConfig(max_batch_size=8),
)
@fill_optionals(offset=np.array([0.5, -0.5], dtype=np.float32))
@batch
def offset(x, offset):
    return {"y": x + offset}


@models.model(
    "Scale",
    inputs=[X, Tensor(name="scale", dtype=np.float32, shape=(1,), optional=True)],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(2,))],
    config=ModelConfig(max_batch_size=8),
)
@group_by_keys
@batch
def scale(x, scale=None):
    return {"y": x if scale is None else x * scale}


@models.model(
    "Scalar",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,), reshape=())],
    outputs=[Tensor(name="ndim", dtype=np.int32, shape=(1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def scalar(x):
    return {"ndim": np.full((len(x), 1), x.ndim, dtype=np.int32)}


@models.model(
    "Classify",
    inputs=[X],
    outputs=[Tensor(name="scores", dtype=np.float32, shape=(3,), labels=["cat", "dog", "emu"])],
    config=ModelConfig(max_batch_size=8),
)
@batch
def classify(x):
    return {"scores": np.stack([x[:, 0], x[:, 1], x.sum(axis=1)], axis=1)}
