"""A batching model for `repogen tune`: its config takes the arguments tune printed, from the environment.

``TUNED_ARGUMENTS`` holds what ``repogen tune`` prints inside ``ModelConfig(..., <here>)``; the test
rebuilds with them and compares the config with the one Model Analyzer measured.
"""

import os

import numpy as np

from repogen import DynamicBatcher, InstanceGroup, ModelConfig, Repository, Tensor, batch

models = Repository()
TUNED = eval(
    f"dict({os.environ.get('TUNED_ARGUMENTS', '')})", {"DynamicBatcher": DynamicBatcher, "InstanceGroup": InstanceGroup}
)


@batch
def scale(x):
    return {"y": x * np.float32(2.0)}


models.bind(
    model_name="Scale",
    infer_func=scale,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(4,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(4,))],
    config=ModelConfig(**{"max_batch_size": 8, "batcher": DynamicBatcher(max_queue_delay_microseconds=100), **TUNED}),
    strict=True,
)
