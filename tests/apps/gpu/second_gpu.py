"""``gpus=[1]`` on a machine with two GPUs or more (tests/gpu): the instance's work lands on GPU 1, not 0.

The model reports, from inside the server, the device its context names, torch's current device when its
class was built and where a tensor made on plain ``"cuda"`` lives.
"""

import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()


class Where:
    def __init__(self, context: ModelContext):
        self.report = [context.device.encode(), str(torch.cuda.current_device()).encode()]
        self.report.append(str(torch.zeros(1, device="cuda").device).encode())

    @batch
    def __call__(self, x):
        return {"where": np.array([self.report] * len(x), dtype=object)}


models.bind(
    model_name="Where",
    infer_func=Where,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(1,))],
    outputs=[Tensor(name="where", dtype=bytes, shape=(3,))],
    config=ModelConfig(max_batch_size=4, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[1])]),
)
