"""GPU faults answered, not crashed, for tests/gpu/test_gpu_faults.py: a batch that runs out of GPU memory, and
outputs larger than tritonserver's CUDA memory pool (64 MiB unless the server is told otherwise)."""

import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch

models = Repository()

GPU = [InstanceGroup(kind="KIND_GPU")]
F32 = np.float32
Y = [Tensor(name="y", dtype=F32, shape=(-1,))]
N = [Tensor(name="n", dtype=np.int64, shape=(1,))]


@models.model(
    "Greedy",
    inputs=[Tensor(name="gib", dtype=F32, shape=(1,))],
    outputs=Y,
    config=ModelConfig(max_batch_size=4, instance_groups=GPU, tensors="torch"),
)
@batch
def greedy(gib):
    """Holds ``gib`` GiB of its GPU while it answers: 100000 fits no GPU, 0.01 any."""
    held = torch.empty(int(float(gib.max()) * (1 << 30)), dtype=torch.uint8, device=gib.device)
    return {"y": gib * 2 + held[:1].float().sum() * 0}


def large(n):
    """``n`` values per row, made on the GPU: 24 Mi of them are 96 MiB, more than the default CUDA pool."""
    rows = n.shape[0]
    return {"y": torch.arange(int(n.max()), dtype=torch.float32, device=n.device).repeat(rows, 1) * 0.5}


for name, memory in (("LargeToHost", None), ("LargeOnGpu", "gpu")):
    config = ModelConfig(max_batch_size=2, instance_groups=GPU, tensors="torch", output_memory=memory)
    models.bind(model_name=name, infer_func=batch(large), inputs=N, outputs=Y, config=config)
