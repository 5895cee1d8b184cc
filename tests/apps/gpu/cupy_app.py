"""cupy's arrays out of and into models on the GPU (tests/gpu), served apart from tests/apps/gpu/app.py: cupy 14
needs numpy 2, which NGC's containers (and the server's Python of the GPU suite) do not have."""

import cupy
import numpy as np

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(-1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(-1,))]
GPU = [InstanceGroup(kind="KIND_GPU", count=1)]


@models.model("CupyOut", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=16, instance_groups=GPU), strict=True)
@batch
def cupy_out(x):
    return {"y": cupy.asarray(x) * 4}


@models.model(
    "CupyIn",
    inputs=X,
    outputs=[*Y, Tensor(name="on_gpu", dtype=np.int64, shape=(1,))],
    config=ModelConfig(max_batch_size=16, instance_groups=GPU, tensors="cupy"),
)
@batch
def cupy_in(x):
    on_gpu = cupy.full((x.shape[0], 1), int(isinstance(x, cupy.ndarray)), dtype=cupy.int64)
    return {"y": x * 5, "on_gpu": on_gpu}
