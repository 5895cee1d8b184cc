"""The GPU benchmark's generated models (bench/gpu.py); bench/handwritten/Gpu*HW are their hand-written twins.

``GpuNumpy``: PyTriton's kind of model, a torch ``Linear`` on the instance's GPU with numpy in and out and
two outputs, requests merged by ``@batch`` into one forward. ``GpuTorch``: the same with
``tensors="torch"``, torch tensors in and out (inputs moved to the GPU once, outputs sent from it through
DLPack). ``TwoStepGpu``/``TwoStepHost``: two steps on the GPU as an ensemble over 4 MB tensors, the tensor
between them kept on the GPU, or taken through host memory (numpy out of the first, numpy into the second).
"""

import numpy as np
import torch

from repogen import DynamicBatcher, InstanceGroup, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()

FEATURES = 256
X = [Tensor(name="x", dtype=np.float32, shape=(FEATURES,))]
OUT = [Tensor(name="y", dtype=np.float32, shape=(FEATURES,)), Tensor(name="norm", dtype=np.float32, shape=(1,))]
Y = [Tensor(name="y", dtype=np.float32, shape=(FEATURES,))]
GPU = [InstanceGroup(kind="KIND_GPU", count=1)]
NUMPY = ModelConfig(max_batch_size=64, instance_groups=GPU, batcher=DynamicBatcher())
TORCH = ModelConfig(max_batch_size=64, instance_groups=GPU, batcher=DynamicBatcher(), tensors="torch")
BIG = [Tensor(name="x", dtype=np.float32, shape=(1 << 20,))]  # 4 MB a row: what a step hands the next
BIG_Y = [Tensor(name="y", dtype=np.float32, shape=(1 << 20,))]
STEP_GPU = ModelConfig(max_batch_size=4, instance_groups=GPU, batcher=DynamicBatcher(), tensors="torch")
STEP_HOST = ModelConfig(max_batch_size=4, instance_groups=GPU, batcher=DynamicBatcher())


def linear(device: str) -> torch.nn.Module:
    torch.manual_seed(0)  # the hand-written twins build the same weights
    return torch.nn.Linear(FEATURES, FEATURES).to(device).eval()


class GpuNumpy:
    def __init__(self, context: ModelContext):
        self.device = context.device
        self.net = linear(self.device)

    @batch
    def __call__(self, x):
        with torch.no_grad():
            y = self.net(torch.from_numpy(x).to(self.device))
            return {"y": y.cpu().numpy(), "norm": y.norm(dim=1, keepdim=True).cpu().numpy()}


class GpuTorch:
    def __init__(self, context: ModelContext):
        self.net = linear(context.device)

    @batch
    def __call__(self, x):
        with torch.no_grad():
            y = self.net(x)
            return {"y": y, "norm": y.norm(dim=1, keepdim=True)}


models.bind("GpuNumpy", GpuNumpy, inputs=X, outputs=OUT, config=NUMPY, strict=True)
models.bind("GpuTorch", GpuTorch, inputs=X, outputs=OUT, config=TORCH, strict=True)


@models.model("ScaleGpu", inputs=BIG, outputs=BIG_Y, config=STEP_GPU)
@batch
def scale_gpu(x):
    return {"y": x * 2}


@models.model("ShiftGpu", inputs=BIG, outputs=BIG_Y, config=STEP_GPU)
@batch
def shift_gpu(x):
    return {"y": x + 1}


@models.model("ScaleHost", inputs=BIG, outputs=BIG_Y, config=STEP_HOST)
@batch
def scale_host(x):
    return {"y": (torch.from_numpy(x).cuda() * 2).cpu().numpy()}


@models.model("ShiftHost", inputs=BIG, outputs=BIG_Y, config=STEP_HOST)
@batch
def shift_host(x):
    return {"y": (torch.from_numpy(x).cuda() + 1).cpu().numpy()}


ENSEMBLE = ModelConfig(max_batch_size=4)
models.ensemble("TwoStepGpu", inputs=BIG, outputs=BIG_Y, config=ENSEMBLE)(lambda x: shift_gpu(x=scale_gpu(x=x)["y"]))
models.ensemble("TwoStepHost", inputs=BIG, outputs=BIG_Y, config=ENSEMBLE)(lambda x: shift_host(x=scale_host(x=x)["y"]))
