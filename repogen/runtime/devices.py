"""A GPU instance's dealings with its device beyond a batch's tensors: which GPU ``cuda`` means in the user's code,
a numpy model's input that python_backend left on the GPU, and what an out-of-memory failure frees and answers.

Carried wherever frameworks.py is (emit/vendoring.py).
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

import numpy as np

from .errors import InferenceError
from .frameworks import FRAMEWORK_MODULES, device_index, host_copy


def use_device(device: str, imports: Any = ()) -> None:
    """On a KIND_GPU instance, make ``cuda`` mean the instance's own GPU before the user's code runs.

    The backend stub sets no CUDA device, so without this ``torch.device("cuda")`` (and cupy's default
    device) would be GPU 0 in every instance, whatever ``gpus=[...]`` said. Only frameworks the model
    loaded, or that the build recorded it importing (``imports``), are touched.
    """
    if not device.startswith("cuda"):
        return
    index = device_index(device)
    for name in FRAMEWORK_MODULES:
        module = sys.modules.get(name)
        if module is None and name in imports:
            module = importlib.import_module(name)
        if module is None:
            continue
        if name == "torch":
            module.cuda.set_device(index)
        else:
            module.cuda.Device(index).use()


def host_input(model: str, tensor: Any) -> np.ndarray:
    """A numpy model's input that python_backend handed in GPU memory (FORCE_CPU_ONLY_INPUT_TENSORS is "no"), copied
    to the host; the error says what to declare where no loaded framework can copy it."""
    try:
        return host_copy(tensor)
    except TypeError as exc:
        raise InferenceError(
            f"model '{model}' input '{tensor.name()}' arrived in GPU memory (FORCE_CPU_ONLY_INPUT_TENSORS is \"no\"), "
            f'but {exc}; declare ModelConfig(tensors="torch") (or "cupy") to take it on the GPU, or drop that '
            "parameter so that Triton hands this model CPU tensors"
        ) from None


def free_gpu_caches() -> None:
    """The loaded frameworks' cached, unused GPU memory given back (after an out-of-memory failure), torch's cached
    page-locked host memory with it, so that what one batch left cached does not make the next one fail too."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
        host_empty_cache = getattr(torch._C, "_host_emptyCache", None)  # page-locked host memory's cache (torch >= 2.4)
        if host_empty_cache is not None:
            host_empty_cache()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


# torch's message for a failed CUDA allocation names its size: "CUDA out of memory. Tried to allocate 20.00 GiB."
_ASKED = re.compile(r"Tried to allocate ([0-9.]+ ?[KMGT]?i?B)")


def out_of_gpu_memory_message(model: str, device: str, exc: BaseException) -> str:
    """The answer to a request whose batch ran out of GPU memory: the model, the device, what was asked, the fix."""
    from .failures import error_message  # at its use: importing devices.py needs no backend

    found = _ASKED.search(str(exc))
    asked = f" asking for {found.group(1)}" if found else ""
    return (
        f"model '{model}' ran out of GPU memory on {device}{asked} ({error_message(exc)}); this batch was not served "
        "and the instance serves the next one: send fewer or smaller requests at once (lower max_batch_size), or "
        "give the model a GPU with more free memory"
    )
