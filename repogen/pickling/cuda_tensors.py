"""torch tensors on a GPU travel as their copies in host memory and land on the unpickling instance's device.

A model made on a GPU at bind time (``model.half().to("cuda")``, PyTriton's ``multi_instance_resnet50_pytorch``)
holds CUDA tensors. torch pickles one with the device it is on, so it would come back on the build's GPU in
every instance, whatever GPU Triton gave the instance, and not at all on a ``KIND_CPU`` one without CUDA. Each
is pickled instead as ``rebuild_tensor(<its host copy>, <a Parameter?>, <requires_grad>)`` of the vendored
runtime (``repogen/runtime/rebuilt_tensors.py``), which puts it on ``cuda:<model_instance_device_id>`` on a
``KIND_GPU`` instance and on the CPU on a ``KIND_CPU`` one; its dtype, shape and values are the tensor's.

Pickle's memo keeps one tensor held in two places (tied weights: one ``Parameter`` in two modules) one
tensor in the server. A model bound to one callable per instance (``infer_func=[f, g]``) has every instance
unpickle them all; a tensor only one callable holds is rebuilt on the device only in the instances serving
that callable, and as a ``meta`` tensor (no memory) in the others. What it does not keep: views of one
another's memory (a slice and its base, two ``Parameter``s over one storage) become separate copies, strides
become contiguous ones, and a tensor subclass other than ``Parameter`` pickles as torch pickles it (on the
build's GPU).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from ..runtime.rebuilt_tensors import rebuild_tensor
from . import cuda_scan


def reducer(owners: Mapping[int, tuple[int, int]] | None = None) -> Callable[[Any], Any] | None:
    """The reduction of CUDA tensors for one pickling; None where this process never imported torch (none exist).

    ``owners`` (``cuda_scan.owners``): the tensors only one of a model's per-instance callables holds, each with
    (its position, the number of callables); an instance that serves another callable makes them ``meta``
    tensors, which take no memory."""
    if cuda_scan.torch_types() is None:
        return None
    torch = sys.modules["torch"]
    tensor, parameter = torch.Tensor, torch.nn.Parameter

    def reduce(obj: Any) -> Any:
        kind = type(obj)
        if (kind is not tensor and kind is not parameter) or not cuda_scan.on_cuda(obj):
            return NotImplemented
        host = obj.detach().to("cpu", copy=True)  # a new tensor: pickled as torch pickles host tensors
        owner = owners.get(id(obj)) if owners else None
        arguments = (host, kind is parameter, bool(obj.requires_grad))
        return rebuild_tensor, arguments if owner is None else (*arguments, owner)

    return reduce
