"""Tensors a callable held on a GPU at build time, rebuilt on the device of the instance that unpickles them.

PyTriton's ``multi_instance_resnet50_pytorch`` makes its model at bind time and moves it there:
``model.half().to("cuda")``. Pickled as torch pickles it, such a tensor would come back on the very GPU the
build used (``cuda:0``) in every instance, and not at all on a server without one. The build pickles each
CUDA tensor as its copy in host memory instead (``repogen/pickling/cuda_tensors.py``), and :func:`rebuild_tensor`
puts it where the instance that unpickles the payload runs: ``cuda:<model_instance_device_id>`` on a
``KIND_GPU`` instance, ``cpu`` on a ``KIND_CPU`` one. ``TritonPythonModel.initialize`` says which with
``payload.loading_on`` around unpickling (every model does: this module ships only with payloads that hold such
tensors, the unpickler importing it). torch is the tensor's own: nothing here imports it.
"""

from __future__ import annotations

import sys
from typing import Any

from .payload import current_load

META = "meta"


def loading_device() -> str:
    """Where :func:`rebuild_tensor` puts tensors: the unpickling instance's device, ``cpu`` outside one."""
    return current_load().device


def rebuild_tensor(data: Any, parameter: bool, requires_grad: bool, owner: tuple[int, int] | None = None) -> Any:
    """A tensor pickled as its host copy ``data``, on this instance's device; a Parameter stays a Parameter.

    Pickle's memo makes one tensor held in two places (tied weights) one tensor here too. ``owner`` (position,
    count): only that callable of ``infer_func=[...]`` holds it, and an instance serving another never runs it,
    so there it becomes a ``meta`` tensor, which takes no memory (the CPU instance of ``["cuda", "cpu"]`` does
    not keep the GPU model's weights; two GPU instances do not each keep both models).
    """
    load = current_load()
    device = load.device
    if owner is not None and load.instance is not None and load.instance % owner[1] != owner[0]:
        device = META
    try:
        tensor = _to_gpu(data, device) if device.startswith("cuda") else data.to(device)
    except Exception as exc:  # torch without CUDA, a GPU out of memory: the model fails to load, saying why
        raise RuntimeError(
            f"model '{load.model}': a tensor made on a GPU at bind time ({tuple(data.shape)} {data.dtype}) cannot load "
            f"onto {device}, the device of this KIND_GPU instance ({type(exc).__name__}: {exc}); the server's torch "
            "needs CUDA and the GPU room for the model's weights, or give the model a KIND_CPU instance_group"
        ) from exc
    if parameter:
        return sys.modules["torch"].nn.Parameter(tensor, requires_grad=requires_grad)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _to_gpu(data: Any, device: str) -> Any:
    """``data`` on ``device`` (``cuda:<id>``), torch first pointed at that GPU (once a load): the stub sets no device,
    and nothing of this instance's should touch GPU 0 where it runs on another."""
    load = current_load()
    if not load.pointed:
        sys.modules["torch"].cuda.set_device(device)
        load.pointed = True
    return data.to(device)
