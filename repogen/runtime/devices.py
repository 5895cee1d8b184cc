"""Tensors a callable held on a GPU at build time, rebuilt on the device of the instance that unpickles them.

PyTriton's ``multi_instance_resnet50_pytorch`` makes its model at bind time and moves it there:
``model.half().to("cuda")``. Pickled as torch pickles it, such a tensor would come back on the very GPU the
build used (``cuda:0``) in every instance, and not at all on a server without one. The build pickles each
CUDA tensor as its copy in host memory instead (``repogen/emit/cuda_tensors.py``), and :func:`rebuild_tensor`
puts it where the instance that unpickles the payload runs: ``cuda:<model_instance_device_id>`` on a
``KIND_GPU`` instance, ``cpu`` on a ``KIND_CPU`` one. ``TritonPythonModel.initialize`` says which with
:func:`loading_on` around unpickling. torch is the tensor's own: nothing here imports it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

CPU = "cpu"
_loading: str | None = None  # the device of the instance unpickling its payload; None outside initialize


@contextlib.contextmanager
def loading_on(device: str) -> Iterator[None]:
    """Tensors made on a GPU at build time land on ``device`` while the payload is unpickled here."""
    global _loading
    previous, _loading = _loading, device
    try:
        yield
    finally:
        _loading = previous


def loading_device() -> str:
    """Where :func:`rebuild_tensor` puts tensors: the unpickling instance's device, ``cpu`` outside one."""
    return _loading or CPU


def rebuild_tensor(data: Any, parameter: bool, requires_grad: bool) -> Any:
    """A tensor pickled as its host copy ``data``, on this instance's device; a Parameter stays a Parameter.

    Pickle's memo makes one tensor held in two places (tied weights) one tensor here too.
    """
    tensor = data.to(loading_device())
    if parameter:
        return sys.modules["torch"].nn.Parameter(tensor, requires_grad=requires_grad)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor
