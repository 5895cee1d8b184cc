"""A TorchScript module as a model: ``models.torchscript`` writes ``platform: "pytorch_libtorch"``.

repogen does not read the module (that would need torch at build time), so its tensors are declared;
unnamed ones take Triton's positional names, ``INPUT__0`` and ``OUTPUT__0``. ``classifier.pt`` is a
placeholder for ``torch.jit.save``'s output: the build copies it as ``classifier/1/model.pt``.
"""

import numpy as np

from repogen import DynamicBatcher, ModelConfig, Repository, Tensor

models = Repository()

models.torchscript(
    "classifier",
    "classifier.pt",
    inputs=[Tensor(dtype=np.float32, shape=(3, 224, 224))],
    outputs=[Tensor(dtype=np.float32, shape=(1000,))],
    config=ModelConfig(max_batch_size=16, batcher=DynamicBatcher(max_queue_delay_microseconds=500)),
)
