"""torch's tensors on a KIND_CPU instance through python_backend's own DLPack (tests/gpu/first_light.py): the first
thing the GPU run serves, and all that the CPU rehearsal (``make gpu-rehearsal``) can serve.

``Bf16``: a BF16 input and output, which numpy cannot hold, so both cross the stub through
``pb_utils.Tensor.to_dlpack``/``from_dlpack``. ``HostTensors``: a torch CPU tensor and an array-API tensor
(array_api_strict, shipped in the repository) returned. Both report whether python_backend handed them their
input in host memory (``handed_on_cpu``: ``is_cpu()`` of the backend's tensor, before the runtime reads it).
``MadeOnGpu``: a model made on a GPU at bind time (docs/gpu.md), bound to a KIND_CPU instance: its tensors travel
as host copies and the runtime rebuilds them on the instance's CPU, in the server. Where torch sees no GPU (the CPU
rehearsal) the build is told its weights are CUDA tensors (``repogen.pickling.cuda_scan.on_cuda``, the seam
tests/unit/ir/test_made_on_gpu.py uses): the server's side is the same.
"""

import array_api_strict as xp
import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor, batch
from repogen.pickling import cuda_scan

models = Repository()

CPU = [InstanceGroup(kind="KIND_CPU", count=1)]
HANDED = Tensor(name="handed_on_cpu", dtype=np.int64, shape=(1,))


def handed_on_cpu(request, name):
    """1 where python_backend handed ``name`` in host memory (``Request.handed_on_cpu``), one row per row."""
    rows = request[name].shape[0]
    return np.full((rows, 1), int(request.handed_on_cpu(name)), dtype=np.int64)


@models.model(
    "Bf16",
    inputs=[Tensor(name="h", dtype="bfloat16", shape=(-1,))],
    outputs=[Tensor(name="h", dtype=torch.bfloat16, shape=(-1,)), HANDED],
    config=ModelConfig(max_batch_size=8, instance_groups=CPU, tensors="torch"),
    strict=True,
)
def bf16(requests):
    answers = []
    for request in requests:
        h = request["h"]
        assert h.dtype == torch.bfloat16 and h.device.type == "cpu", (h.dtype, h.device)
        answers.append({"h": h * 2, "handed_on_cpu": handed_on_cpu(request, "h")})
    return answers


@models.model(
    "HostTensors",
    inputs=[Tensor(name="x", dtype=np.float32, shape=(-1,))],
    outputs=[Tensor(name="t", dtype=np.float32, shape=(-1,)), Tensor(name="a", dtype=np.float32, shape=(-1,)), HANDED],
    config=ModelConfig(max_batch_size=8, instance_groups=CPU),
    strict=True,
)
def host_tensors(requests):
    return [
        {"t": torch.from_numpy(r["x"]) * 3, "a": xp.asarray(r["x"]) + 1, "handed_on_cpu": handed_on_cpu(r, "x")}
        for r in requests
    ]


class MadeOnGpu:
    """PyTriton's ``_InferFuncWrapper`` over two Linear layers with one tied weight, the second frozen."""

    def __init__(self, model, device):
        self._model = model
        self._device = device

    @batch
    def __call__(self, x):
        first, second = self._model[0], self._model[1]
        with torch.no_grad():
            y = self._model(torch.from_numpy(x).to(self._device)).numpy()
        facts = [
            int(type(first.weight) is torch.nn.Parameter and type(second.bias) is torch.nn.Parameter),
            int(first.weight.requires_grad and not second.bias.requires_grad),
            int(second.weight is first.weight),
            int(first.weight.device.type == "cpu"),
        ]
        return {"y": y, "facts": np.array([facts] * len(x), dtype=np.int64)}


def _made_on_gpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    model[1].weight = model[0].weight  # tied
    model[1].bias.requires_grad_(False)
    if torch.cuda.is_available():
        return model.to("cuda").eval()
    made = {id(t) for t in model.parameters()}
    cuda_scan.on_cuda = lambda tensor: id(tensor) in made or tensor.is_cuda  # what .to("cuda") would have made
    return model.eval()


models.bind(
    model_name="MadeOnGpu",
    infer_func=MadeOnGpu(_made_on_gpu(), "cpu"),
    inputs=[Tensor(name="x", dtype=np.float32, shape=(2,))],
    outputs=[Tensor(name="y", dtype=np.float32, shape=(2,)), Tensor(name="facts", dtype=np.int64, shape=(4,))],
    config=ModelConfig(max_batch_size=8, instance_groups=CPU),
    strict=True,
)
