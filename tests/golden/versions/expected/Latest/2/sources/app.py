"""Versions: one model bound several times with ``model_version``, and which of them Triton serves.

    repogen build tests/golden/versions/app.py:models -o build/versions

Each binding becomes a numbered directory (``Scaler/1``, ``Scaler/2``, ...) with its own payload;
``config.pbtxt`` is shared. Without a ``version_policy`` every bound version is served (the
build writes ``version_policy { all {} }``); ``VersionPolicy.latest(n)`` serves the n highest,
``VersionPolicy.specific(...)`` the ones listed. ``repogen build --version N`` rebuilds one
version beside the others.
"""

import numpy as np

from repogen import ModelConfig, Repository, Tensor, VersionPolicy

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(1,))]


def scale_by(factor):
    def scale(requests):
        return [{"y": r["x"] * np.float32(factor)} for r in requests]

    return scale


for version in (1, 2):
    models.bind("Scaler", scale_by(version), X, Y, model_version=version, config=ModelConfig(batching=False))

for version in (1, 2, 3):
    models.bind(
        "Latest",
        scale_by(10 * version),
        X,
        Y,
        model_version=version,
        config=ModelConfig(batching=False, version_policy=VersionPolicy.latest(2)),
    )

for version in (1, 3):
    models.bind(
        "Pinned",
        scale_by(100 * version),
        X,
        Y,
        model_version=version,
        config=ModelConfig(batching=False, version_policy=VersionPolicy.specific(3)),
    )
