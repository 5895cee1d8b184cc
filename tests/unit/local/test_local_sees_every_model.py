"""``Repository.local()`` lowers again after any declaration, of every kind, not only bind and ensembles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from repogen import BuildError, ModelConfig, Repository, Tensor, batch

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]


@batch
def _double(x):
    return {"y": x * 2}


def test_a_model_added_after_the_first_local_call_is_seen(tmp_path: Path) -> None:
    plan = tmp_path / "model.plan"
    plan.write_bytes(b"not read by the build")
    models = Repository()
    models.bind("Double", _double, X, Y, config=ModelConfig(max_batch_size=4))
    first = models.local()
    assert models.local() is first  # unchanged: the same runner, class models keep their state
    models.tensorrt("Plan", plan, inputs=X, outputs=Y, config=ModelConfig(max_batch_size=4))
    second = models.local()
    assert second is not first and "Plan" in second.spec.names
    models.include("Included", tmp_path / "nowhere")  # lowered at the next local() call, which says it is missing
    with pytest.raises(BuildError, match="'Included'"):
        models.local()
    assert second.infer("Double", {"x": np.array([[1.0]], dtype=np.float32)})["y"].tolist() == [[2.0]]
