"""Models made on a GPU at bind time, as PyTriton's examples make them (tests/gpu/test_gpu_made_on_gpu.py).

``multi_instance_resnet50_pytorch`` makes its model at import and moves it to the GPU before ``bind``
(``model.half().to(device).eval()``, wrapped with the device its inputs go to); PyTriton's binding docs bind one
callable per device, ``devices=["cuda", "cpu"]``. Building this app needs a GPU: ``.to("cuda")`` runs here. Each
model answers ``device``: where its weights are in the server (``cuda:<id>`` or ``cpu``), and ``parameter``: 1
where its weight is still a ``torch.nn.Parameter``.
"""

import time

import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch

models = Repository()

X = [Tensor(name="x", dtype=np.float32, shape=(4,))]
OUT = [
    Tensor(name="y", dtype=np.float32, shape=(2,)),
    Tensor(name="device", dtype=bytes, shape=(1,)),
    Tensor(name="parameter", dtype=np.int64, shape=(1,)),
]


class InferFuncWrapper:
    """PyTriton's ``_InferFuncWrapper``: the model made at bind time, and the device its inputs go to."""

    def __init__(self, model, device):
        self._model = model
        self._device = device

    @batch
    def __call__(self, x):
        time.sleep(0.02)  # long enough that concurrent requests reach both instances of CudaAndCpu
        weight = self._model.weight
        with torch.inference_mode():
            y = self._model(torch.from_numpy(x).to(self._device).to(weight.dtype)).float().cpu().numpy()
        rows = len(x)
        return {
            "y": y,
            "device": np.array([[str(weight.device).encode()]] * rows, dtype=object),
            "parameter": np.full((rows, 1), int(type(weight) is torch.nn.Parameter), dtype=np.int64),
        }


def linear(seed):
    torch.manual_seed(seed)
    return torch.nn.Linear(4, 2)


def infer_function_factory(devices):
    """One callable per device, each with its own model made there (PyTriton's binding docs)."""
    return [InferFuncWrapper(linear(index).to(device).eval(), device) for index, device in enumerate(devices)]


# multi_instance_resnet50_pytorch's way, with a Linear for ResNet-50: half precision, moved to "cuda" at bind time
models.bind(
    model_name="HalfOnGpu",
    infer_func=InferFuncWrapper(linear(0).half().to("cuda").eval(), "cuda"),
    inputs=X,
    outputs=OUT,
    config=ModelConfig(max_batch_size=8),
    strict=True,
)

# PyTriton's binding docs: devices=["cuda", "cpu"], one GPU and one CPU instance
models.bind(
    model_name="CudaAndCpu",
    infer_func=infer_function_factory(["cuda", "cpu"]),
    inputs=X,
    outputs=OUT,
    config=ModelConfig(max_batch_size=8),
    strict=True,
)

# Made on GPU 0, told to run on the CPU: its tensors load there
models.bind(
    model_name="MadeOnGpuRunOnCpu",
    infer_func=InferFuncWrapper(linear(0).to("cuda").eval(), "cpu"),
    inputs=X,
    outputs=OUT,
    config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_CPU")]),
    strict=True,
)

if (
    torch.cuda.device_count() > 1
):  # made on cuda:0, served on GPU 1: its tensors land there; made on cuda:1, served there
    models.bind(
        model_name="MadeOnGpu1",
        infer_func=InferFuncWrapper(linear(0).to("cuda:1").eval(), "cuda:1"),
        inputs=X,
        outputs=OUT,
        config=ModelConfig(max_batch_size=8),
        strict=True,
    )
    models.bind(
        model_name="MadeOnGpu0ServedOnGpu1",
        infer_func=InferFuncWrapper(linear(0).to("cuda").eval(), "cuda"),
        inputs=X,
        outputs=OUT,
        config=ModelConfig(max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU", gpus=[1])]),
        strict=True,
    )
