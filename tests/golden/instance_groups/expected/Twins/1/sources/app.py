"""Instance groups: how many copies of a model run, and where; each instance is its own process.

    repogen build tests/golden/instance_groups/app.py:models -o build/instance_groups

Without ``instance_groups`` a model gets one CPU instance per callable bound, so
``infer_func=[first, second]`` (PyTriton's form) makes two instances, each running its own
callable. ``InstanceGroup(count, kind, gpus)`` writes Triton's ``instance_group`` as given: two
CPU instances of ``Pool``; ``OnGpus`` places one instance on each of GPUs 0 and 1 (it builds
anywhere; only a server with those GPUs loads it). ``context.instance_index`` tells an instance
which one it is.
"""

import os

import numpy as np

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch, triton_context

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(1,))]
WHO = [Tensor(name="instance", dtype=np.int32, shape=(1,)), Tensor(name="pid", dtype=np.int64, shape=(1,))]


def answered_by(index):
    def who(requests):
        return [{"instance": np.array([index], np.int32), "pid": np.array([os.getpid()], np.int64)} for _ in requests]

    return who


models.bind(
    "Twins", infer_func=[answered_by(0), answered_by(1)], inputs=X, outputs=WHO, config=ModelConfig(batching=False)
)


@models.model(
    "Pool",
    inputs=X,
    outputs=WHO,
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(count=2, kind="KIND_CPU")]),
)
@triton_context
@batch
def pool(x, triton_context):
    rows = len(x)
    return {
        "instance": np.full((rows, 1), triton_context.instance_index, np.int32),
        "pid": np.full((rows, 1), os.getpid(), np.int64),
    }


@models.model(
    "OnGpus",
    inputs=X,
    outputs=[Tensor(name="device", dtype=np.int32, shape=(1,))],
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(count=1, kind="gpu", gpus=[0, 1])]),
)
@triton_context
@batch
def on_gpus(x, triton_context):
    return {"device": np.full((len(x), 1), triton_context.device_id, np.int32)}
