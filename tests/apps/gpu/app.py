"""GPU tensors through every path, for tests/gpu (a machine with an NVIDIA GPU, torch and cupy in the server's Python).

Built with torch ``--provided``: it comes from the server's environment (cupy's models are tests/apps/gpu/cupy_app.py,
served apart). Models that check where their tensors were report it: ``on_gpu``, 1 when the callable got device
memory (which the runtime gives a torch model either way, moving a host tensor there); ``handed_on_gpu``, 1 when
python_backend handed the model device memory (``is_cpu()`` of its own tensor, before the runtime read it), which
a trip through host memory on the way, an ensemble's or a BLS call's, cannot leave; ``same_storage``, 1 when a
fused step got the very memory the step before it made.
"""

import time

import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, ModelContext, Repository, Tensor, batch

models = Repository()

F32 = np.float32
X = [Tensor(name="x", dtype=F32, shape=(-1,))]
Y = [Tensor(name="y", dtype=F32, shape=(-1,))]
ON_GPU = Tensor(name="on_gpu", dtype=np.int64, shape=(1,))
GPU = [InstanceGroup(kind="KIND_GPU", count=1)]
BATCHED_GPU = ModelConfig(max_batch_size=16, instance_groups=GPU)


def flags(x, rows, value=None):
    """``value`` (default: whether ``x`` is on a GPU) as one int64 row per row, on ``x``'s device."""
    return torch.full((rows, 1), int(x.is_cuda if value is None else value), dtype=torch.int64, device=x.device)


HANDED_ON_GPU = Tensor(name="handed_on_gpu", dtype=np.int64, shape=(1,))
STORAGE = Tensor(name="storage", dtype=np.int64, shape=(1,))


class Linear:
    """PyTriton's example: a torch Linear on the instance's device, numpy in and out."""

    def __init__(self, context: ModelContext):
        torch.manual_seed(0)
        self.device = context.device
        self.model = torch.nn.Linear(4, 2).to(self.device).eval()
        self.where = np.array([[context.device.encode()]], dtype=object)

    @batch
    def __call__(self, x):
        time.sleep(0.05)  # long enough that concurrent requests reach both instances
        with torch.no_grad():
            y = self.model(torch.from_numpy(x).to(self.device)).cpu().numpy()
        return {"y": y, "device": np.repeat(self.where, len(x), axis=0)}


models.bind(
    model_name="Linear",
    infer_func=Linear,
    inputs=[Tensor(name="x", dtype=F32, shape=(4,))],
    outputs=[Tensor(name="y", dtype=F32, shape=(2,)), Tensor(name="device", dtype=bytes, shape=(1,))],
    config=ModelConfig(
        max_batch_size=8, instance_groups=[InstanceGroup(kind="KIND_GPU"), InstanceGroup(kind="KIND_CPU")]
    ),
    strict=True,
)


@models.model("TorchOut", inputs=X, outputs=Y, config=BATCHED_GPU, strict=True)
@batch
def torch_out(x):
    return {"y": torch.from_numpy(x).cuda() * 3}  # what a torch user writes


@models.model("TorchCast", inputs=X, outputs=Y, config=BATCHED_GPU)
@batch
def torch_cast(x):
    """Not strict: float64 made float32 on the GPU, a transposed view made contiguous there."""
    doubled = torch.from_numpy(np.ascontiguousarray(np.stack([x, x], axis=2))).cuda().double()
    return {"y": doubled.transpose(1, 2)[:, 0]}


TORCH_IN = ModelConfig(max_batch_size=16, instance_groups=GPU, tensors="torch")


@models.model("TorchIn", inputs=X, outputs=[*Y, ON_GPU], config=TORCH_IN, strict=True)
@batch
def torch_in(x):
    """tensors="torch": HTTP inputs arrive in host memory and are moved to the instance's GPU once."""
    return {"y": x + 1, "on_gpu": flags(x, x.shape[0])}


class Scale:
    """A class model taking torch tensors on its instance's GPU."""

    def __init__(self, context: ModelContext):
        self.factor = torch.tensor([2.0], device=context.device)  # "cuda:<id>" on a KIND_GPU instance

    @batch
    def __call__(self, x):  # a torch tensor on this instance's GPU
        return {"y": x * self.factor, "on_gpu": flags(x, x.shape[0])}  # sent from the GPU


models.bind(
    model_name="Scale",
    infer_func=Scale,
    inputs=X,
    outputs=[*Y, ON_GPU],
    config=ModelConfig(max_batch_size=16, instance_groups=[InstanceGroup(kind="KIND_GPU")], tensors="torch"),
)


@models.model("Produce", inputs=X, outputs=[*Y, STORAGE], config=BATCHED_GPU)
@batch
def produce(x):
    """The first step: a GPU tensor out, and the address of the memory it lives in (``storage``)."""
    y = torch.from_numpy(x).cuda() * 2
    return {"y": y, "storage": flags(y, y.shape[0], y.untyped_storage().data_ptr())}


@models.model("Consume", inputs=X, outputs=[*Y, ON_GPU, HANDED_ON_GPU], config=TORCH_IN)
def consume(requests):
    """The second step, or a BLS callee: says whether python_backend handed it device memory (undecorated, to see
    each request as the server handed it)."""
    answers = []
    for request in requests:
        x = request["x"]
        handed = not request.handed_on_cpu("x")
        answers.append({"y": x + 10, "on_gpu": flags(x, x.shape[0]), "handed_on_gpu": flags(x, x.shape[0], handed)})
    return answers


SAME_STORAGE = Tensor(name="same_storage", dtype=np.int64, shape=(1,))


@models.model("Keep", inputs=[*X, STORAGE], outputs=[*Y, ON_GPU, SAME_STORAGE], config=TORCH_IN)
def keep(requests):
    """A fused pipeline's second step: whether it got the memory the first step made (``storage``), not a copy."""
    answers = []
    for request in requests:
        x, made = request["x"], int(request["storage"][0, 0])
        same = x.untyped_storage().data_ptr() == made
        answers.append({"y": x + 10, "on_gpu": flags(x, x.shape[0]), "same_storage": flags(x, x.shape[0], same)})
    return answers


def pipeline(x):
    second = consume(x=produce(x=x)["y"])
    return {"y": second["y"], "on_gpu": second["on_gpu"], "handed_on_gpu": second["handed_on_gpu"]}


def fused_pipeline(x):
    first = produce(x=x)
    second = keep(x=first["y"], storage=first["storage"])
    return {"y": second["y"], "on_gpu": second["on_gpu"], "same_storage": second["same_storage"]}


models.ensemble("OnGpu", inputs=X, outputs=[*Y, ON_GPU, HANDED_ON_GPU], config=ModelConfig(max_batch_size=16))(pipeline)
models.ensemble(
    "OnGpuFused",
    inputs=X,
    outputs=[*Y, ON_GPU, SAME_STORAGE],
    config=ModelConfig(max_batch_size=16, instance_groups=GPU),
    fuse=True,
)(fused_pipeline)


@models.model(
    "Caller",
    inputs=X,
    outputs=[*Y, ON_GPU, HANDED_ON_GPU, Tensor(name="back_on_gpu", dtype=np.int64, shape=(1,))],
    config=TORCH_IN,
)
@batch
def caller(x):
    """BLS with a GPU tensor: the callee is handed device memory, the answer comes back on the GPU as torch."""
    answer = consume(x=x * 2)
    back = answer["y"]
    return {
        "y": back, "on_gpu": answer["on_gpu"], "handed_on_gpu": answer["handed_on_gpu"],
        "back_on_gpu": flags(back, x.shape[0]),
    }  # fmt: skip


@models.model("NumpyCaller", inputs=X, outputs=Y, config=ModelConfig(max_batch_size=16))
@batch
def numpy_caller(x):
    """A numpy caller of a GPU model: its answer comes in host memory, as numpy."""
    y = produce(x=x)["y"]
    assert type(y) is np.ndarray, type(y)
    return {"y": y}


@models.model(
    "Tokens",
    inputs=[Tensor(name="n", dtype=np.int32, shape=(1,))],
    outputs=[Tensor(name="token", dtype=F32, shape=(2,))],
    config=ModelConfig(batching=False, instance_groups=GPU, tensors="torch"),
)
def tokens(requests):
    """Decoupled: each response a torch tensor made on the GPU."""
    n = int(requests[0]["n"][0])
    for step in range(n):
        yield [{"token": torch.tensor([step, step * step], dtype=torch.float32, device="cuda")}]


BF16 = Tensor(name="h", dtype="bfloat16", shape=(-1,))


@models.model(
    "Half",
    inputs=[BF16],
    outputs=[Tensor(name="h", dtype=torch.bfloat16, shape=(-1,))],
    config=ModelConfig(max_batch_size=8, instance_groups=GPU, tensors="torch"),
    strict=True,
)
@batch
def half(h):
    assert h.dtype == torch.bfloat16 and h.is_cuda
    return {"h": h * 2}
