"""The instruction floor (tests/integration/test_instruction_floor.py): a generated identity whose every
request the stub serves at no more cost than the hand-written ``IdentityHW`` beside it.

An identity, so that the serving path is all there is to count: the ``@batch`` function hands its input back,
as ``IdentityHW/1/model.py`` does with ``pb_utils`` directly. Both run under the config.pbtxt built here.
"""

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor, batch

models = Repository()


@batch
def identity(x):
    return {"y": x}


models.bind(
    model_name="Identity",
    infer_func=identity,
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=64, batcher=DynamicBatcher()),
    strict=True,
)
