"""The GPU benchmark's generated models (bench/gpu.py); bench/handwritten holds their hand-written twins, each
served under its generated model's config.pbtxt: ``<Model>NV`` as NVIDIA's own PyTorch handler writes it,
``<Model>BP`` as a careful hand does (host join, pinned memory, one wait), ``GpuNumpyHW`` GpuNumpy's by hand.

Three workloads, every twin computing the same thing from the same weights (``torch.manual_seed(0)``):

* ``GpuTorch``: a 256-wide torch ``Linear`` with ``tensors="torch"``, torch tensors in and out, two outputs,
  requests merged by ``@batch`` into one forward. ``GpuNumpy``: the same with numpy in and out (PyTriton's
  kind of model: the callable moves its tensors itself).
* ``GpuImage``: an image model's tensors, a batch of 3x224x224 FP32 images in (602 KB each), 1000 class scores
  out; the network stand-in is cheap on the GPU (a mean over each channel, then a ``Linear(3, 1000)``), so what
  is measured is the tensors' way in and out, not the arithmetic.
* ``GpuTokens``: decoupled token streaming from a GPU model: ``TOKENS`` int32 tokens per request, each made
  on the GPU from the input (a step of a small recurrence, then its argmax) and sent as it is made. An async
  generator that lets the other streams in after each token (``await asyncio.sleep(0)``), as a server of many
  streams does: one instance has up to ``max_concurrency`` streams in flight (python_backend's async ``execute``
  for the twins), so that c=8 and c=32 measure streams served at once, not streams queued behind one another.

``TwoStepGpu``/``TwoStepHost``: two steps on the GPU as an ensemble over 4 MB tensors, the tensor between them
kept on the GPU, or taken through host memory (numpy out of the first, numpy into the second).
"""

import asyncio

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

IMAGE = [Tensor(name="image", dtype=np.float32, shape=(3, 224, 224))]
LOGITS = [Tensor(name="logits", dtype=np.float32, shape=(1000,))]
IMAGE_CONFIG = ModelConfig(max_batch_size=32, instance_groups=GPU, batcher=DynamicBatcher(), tensors="torch")


def classifier(device: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 1000).to(device).eval().requires_grad_(False)


class GpuImage:
    def __init__(self, context: ModelContext):
        self.net = classifier(context.device)

    @batch
    def __call__(self, image):
        return {"logits": self.net(image.mean(dim=(2, 3)))}


models.bind("GpuImage", GpuImage, inputs=IMAGE, outputs=LOGITS, config=IMAGE_CONFIG, strict=True)

TOKENS = 64  # per request
WIDTH = 16  # the recurrence's state
PROMPT = [Tensor(name="prompt", dtype=np.float32, shape=(WIDTH,))]
TOKEN = [Tensor(name="token", dtype=np.int32, shape=(1,))]
STREAM_CONFIG = ModelConfig(batching=False, instance_groups=GPU, tensors="torch")


def recurrence(device: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(WIDTH, WIDTH).to(device).eval().requires_grad_(False)


class GpuTokens:
    def __init__(self, context: ModelContext):
        self.net = recurrence(context.device)

    async def __call__(self, requests):
        state = requests[0]["prompt"]
        for _ in range(TOKENS):
            state = torch.tanh(self.net(state))
            yield [{"token": state.argmax().to(torch.int32).reshape(1)}]
            await asyncio.sleep(0)  # the other streams' turn


models.bind("GpuTokens", GpuTokens, inputs=PROMPT, outputs=TOKEN, config=STREAM_CONFIG, strict=True)


class GpuTokensHost(GpuTokens):
    """GpuTokens whose callable takes each token to host memory itself (``.cpu().numpy()``): bench/gpu.py's
    reference beside the best-practice twin for where a generated stream's time goes, the way its GPU tokens leave
    (runtime/transfers.py) or the stream's own way (runtime/concurrency.py)."""

    async def __call__(self, requests):
        async for step in super().__call__(requests):
            yield [{"token": step[0]["token"].cpu().numpy()}]


models.bind("GpuTokensHost", GpuTokensHost, inputs=PROMPT, outputs=TOKEN, config=STREAM_CONFIG, strict=True)


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
