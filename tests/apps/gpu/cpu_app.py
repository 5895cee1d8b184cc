"""torch's tensors on a KIND_CPU instance through python_backend's own DLPack (tests/gpu/first_light.py): the first
thing the GPU run serves, and all that the CPU rehearsal (``make gpu-rehearsal``) can serve.

``Bf16``: a BF16 input and output, which numpy cannot hold, so both cross the stub through
``pb_utils.Tensor.to_dlpack``/``from_dlpack``. ``HostTensors``: a torch CPU tensor and an array-API tensor
(array_api_strict, shipped in the repository) returned. Both report whether python_backend handed them their
input in host memory (``handed_on_cpu``: ``is_cpu()`` of the backend's tensor, before the runtime reads it).
"""

import array_api_strict as xp
import numpy as np
import torch

from repogen import InstanceGroup, ModelConfig, Repository, Tensor

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
