"""The boundary between python_backend's tensors and the callable's: numpy, or the framework a model declared.

Every path of tensors in and out goes through here: the general ``execute`` and the generated straight-line
one (numpy only), fused steps, BLS calls.

In: a numpy model reads each input with ``as_numpy()`` (the stub's own aligned copy); an input that reached
it in GPU memory is copied to the host once. A model that declared
``tensors="torch"`` (or ``"cupy"``, or any array-API module) gets that framework's tensors on its
instance's device: inputs already on a GPU (an ensemble step, a BLS caller, CUDA shared memory) are
taken through DLPack without a copy, CPU inputs are moved there once. BYTES inputs stay numpy object
arrays, which no framework holds.

Out: a numpy array becomes ``pb_utils.Tensor(name, array)`` (``from_dlpack`` of a numpy array kills
2.51's stub); a framework's tensor in host memory, a numpy view of it; a GPU instance's GPU outputs leave
through transfers.py, any other GPU tensor through ``pb_utils.Tensor.from_dlpack``. BF16, which numpy
cannot hold, always goes out through DLPack.

numpy's paths never leave this module: frameworks.py and transfers.py are imported only once another
framework's tensor exists or a GPU instance needs them, so a model version that can meet none (numpy on
the CPU, a payload importing no framework) carries neither (emit/vendoring.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .contract import BF16, NUMPY
from .errors import InferenceError

if TYPE_CHECKING:
    from .frameworks import Framework
    from .transfers import Arrival, Departure

_TRANSFERS = f"{__package__}.transfers"

# numpy >= 1.25: concatenate's C implementation, without the __array_function__ dispatch in front of it
_concatenate = getattr(np.concatenate, "_implementation", np.concatenate)


_FRAMEWORKS = f"{__package__}.frameworks"


def framework_of(value: Any) -> Framework | None:
    """The framework of a tensor that is not a numpy array (runtime/frameworks.py, imported only once one exists:
    a ``__dlpack__`` object), None for anything else."""
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        return None
    module: Any = sys.modules.get(_FRAMEWORKS)
    if module is None:  # once: an import statement costs ~1 µs a call
        from . import frameworks as module
    return module.framework_of(value)  # type: ignore[no-any-return]


def made_ready(value: Any) -> bool:
    """Whether ``value`` is an output a GPU batch's ``Departure`` already made into the backend's tensor
    (``transfers.Ready``: there is none until a GPU instance loaded runtime/transfers.py)."""
    transfers = sys.modules.get(_TRANSFERS)
    return transfers is not None and type(value) is transfers.Ready


def backend_tensor(pb_utils: Any, name: str, value: Any) -> Any:
    """The python_backend tensor that sends ``value`` (already checked against its declaration)."""
    if type(value) is np.ndarray:
        return pb_utils.Tensor(name, value)
    if made_ready(value):  # made by the batch's Departure
        return value.tensor
    framework = framework_of(value)
    if framework is None:
        return pb_utils.Tensor(name, value)
    from .frameworks import on_cpu

    value = framework.exportable(value)
    if on_cpu(value) and framework.element(value) != "bfloat16":
        return pb_utils.Tensor(name, np.from_dlpack(value))
    return pb_utils.Tensor.from_dlpack(name, value)


def host_array(value: Any) -> Any:
    """``value`` as numpy in host memory where it is another framework's tensor; anything else as it is."""
    if type(value) is np.ndarray:
        return value
    framework = framework_of(value)
    return value if framework is None else framework.host(value)


def concatenate(parts: list[Any]) -> Any:
    """Requests' inputs stacked along the batch axis, by numpy or by the tensors' own framework, on their device."""
    first = parts[0]
    if type(first) is np.ndarray:
        return _concatenate(parts)
    framework = framework_of(first)
    return _concatenate(parts) if framework is None else framework.concat(parts)


def row_range(value: Any, start: int, end: int) -> Any:
    """Rows ``start:end`` of a batch: numpy's, a framework's (indexed on every axis, as the array API asks) or a
    list's."""
    if type(value) is np.ndarray or framework_of(value) is None:
        return value[start:end]
    return value[start:end, ...]


class Placement:
    """Where a model's callable wants its tensors: numpy on the CPU, or a framework's on the instance's device."""

    def __init__(self, tensors: str = NUMPY, device: str = "cpu"):
        self.tensors = tensors
        self.device = device
        self.framework: Framework | None = None
        if tensors != NUMPY:
            from .frameworks import framework_named

            self.framework = framework_named(tensors)
        on_gpu = device.startswith("cuda")
        self.arrival: Arrival | None = None
        """Where host inputs cross to the GPU in one copy a batch: a GPU instance taking torch's tensors."""
        if on_gpu and self.framework is not None and self.framework.batch_transfers:
            from .transfers import Arrival

            self.arrival = Arrival(self.framework, device)

    def departure(
        self, pb_utils: Any, model: str, output_memory: str, log: Callable[[str, str], None]
    ) -> Departure | None:
        """How a GPU instance's outputs leave, a batch at a time (None elsewhere: whatever it returns is sent as is)."""
        if not self.device.startswith("cuda"):
            return None
        from .transfers import CUDA_POOL_DEFAULT, Departure

        warn = lambda line: log("log_warn", line)  # noqa: E731
        return Departure(pb_utils, model, output_memory, CUDA_POOL_DEFAULT, self.arrival, warn)

    def reader(self, model: str, data_types: dict[str, str]) -> Callable[[Any], Any]:
        """How each input tensor of a request is read (``data_types``: input name -> Triton data type); a framework's
        tensors by runtime/transfers.py's ``input_reader``, carried with frameworks.py."""
        if self.framework is None:
            return lambda tensor: _numpy_input(model, tensor, data_types)
        from .transfers import input_reader

        return input_reader(self.framework, self.device, data_types, staged=self.arrival is not None)


def _numpy_input(model: str, tensor: Any, data_types: dict[str, str]) -> np.ndarray:
    if tensor.is_cpu():
        if data_types.get(tensor.name()) == BF16:
            raise InferenceError(
                f"model '{model}' input '{tensor.name()}' is BF16, which numpy cannot hold; declare "
                'ModelConfig(tensors="torch") to receive it as a torch.bfloat16 tensor'
            )
        return tensor.as_numpy()  # type: ignore[no-any-return]
    from .devices import host_input  # inputs left on the GPU (FORCE_CPU_ONLY_INPUT_TENSORS): carried then

    return host_input(model, tensor)
