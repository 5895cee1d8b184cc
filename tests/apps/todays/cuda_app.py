"""A model shipping a package whose native library links CUDA 12's runtime (cudaprobe, a wheel the test makes).

NGC 25.08 and later carry CUDA 13: a default build leaves them out with a warning, --triton-release 25.08
fails naming the library, and the repository serves on the CUDA 12 containers. cudaprobe's Python code
never loads the library, so the model answers on a CPU-only server.
"""

import cudaprobe
import numpy as np

from repogen import ModelConfig, Repository, Tensor, batch

models = Repository()


@models.model(
    "Probe",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(-1,))],
    config=ModelConfig(max_batch_size=4),
)
@batch
def probe(x):
    return {"y": cudaprobe.triple(x)}
