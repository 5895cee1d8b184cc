"""A fused pipeline's framework tensors pass from step to step as they are: the second step gets the very memory
the first made (torch's CPU build here; tests/gpu checks the same on a GPU, where a copy would be a trip through
host memory)."""

from __future__ import annotations

import numpy as np
from general_path import TritonPythonModel, initialize_args
from general_path import request as _request
from torch_cpu import torch  # a failure naming `make frameworks` where it is missing

from repogen import ModelConfig, Repository, Tensor, batch
from repogen.build import build_repository
from repogen.packages.options import PackageOptions

F32 = np.float32
X = [Tensor(name="x", dtype=F32, shape=(-1,))]
STORAGE = Tensor(name="storage", dtype=np.int64, shape=(1,))
SAME = Tensor(name="same_storage", dtype=np.int64, shape=(1,))
TORCH = ModelConfig(max_batch_size=8, tensors="torch")


def _pipeline() -> Repository:
    repo = Repository()

    @repo.model("Produce", inputs=X, outputs=[Tensor(name="y", dtype=F32, shape=(-1,)), STORAGE], config=TORCH)
    @batch
    def produce(x):
        y = x * 2
        return {"y": y, "storage": torch.full((len(y), 1), y.untyped_storage().data_ptr(), dtype=torch.int64)}

    @repo.model("Keep", inputs=[*X, STORAGE], outputs=[Tensor(name="y", dtype=F32, shape=(-1,)), SAME], config=TORCH)
    def keep(requests):
        answers = []
        for request in requests:
            x, made = request["x"], int(request["storage"][0, 0])
            same = int(x.untyped_storage().data_ptr() == made)
            answers.append({"y": x + 10, "same_storage": torch.full((len(x), 1), same, dtype=torch.int64)})
        return answers

    @repo.ensemble("Fused", inputs=X, outputs=[Tensor(name="y", dtype=F32, shape=(-1,)), SAME], config=TORCH, fuse=True)
    def pipeline(x):
        first = produce(x=x)
        second = keep(x=first["y"], storage=first["storage"])
        return {"y": second["y"], "same_storage": second["same_storage"]}

    return repo


def test_the_second_step_gets_the_memory_the_first_made(tmp_path):
    built = build_repository(_pipeline(), tmp_path / "repo", packages=PackageOptions(mode="record"))
    spec = built.spec.fused_spec("Fused").model
    model = TritonPythonModel()
    model.initialize(initialize_args(spec, "Fused", tmp_path / "repo" / "Fused"))
    (response,) = model.execute([_request(x=np.array([[1.0], [2.0]], dtype=F32))])
    assert not response.has_error(), response.error().message()
    outputs = {t.name(): np.asarray(t._array).tolist() for t in response.output_tensors()}
    assert outputs == {"y": [[12.0], [14.0]], "same_storage": [[1], [1]]}
