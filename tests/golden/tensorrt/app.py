"""A TensorRT plan as a model: ``models.tensorrt`` writes ``platform: "tensorrt_plan"``.

A plan is an engine built for one GPU and TensorRT version; repogen copies it as
``detector/<version>/model.plan`` and never reads it, so every tensor is declared with its binding's
name. ``detector.plan`` is a placeholder for a serialized engine.
"""

import numpy as np

from repogen import InstanceGroup, ModelConfig, Repository, Tensor

models = Repository()

models.tensorrt(
    "detector",
    "detector.plan",
    inputs=[Tensor(name="images", dtype=np.float16, shape=(3, 640, 640))],
    outputs=[Tensor(name="boxes", dtype=np.float32, shape=(-1, 6)), Tensor(name="count", dtype=np.int32, shape=(1,))],
    config=ModelConfig(max_batch_size=4, instance_groups=[InstanceGroup(count=1, kind="KIND_GPU", gpus=[0])]),
)
