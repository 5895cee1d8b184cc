"""Sizing: ``/dev/shm`` for the Python backend and Kubernetes resource quantities; the figures live here only.

Every Python model instance is a backend stub process that exchanges tensors with the server through
one shared-memory region in ``/dev/shm``. The region starts at the backend's ``shm-default-byte-size``
and grows by ``shm-growth-byte-size`` steps until it holds the inputs and outputs of the batch in
flight; it never shrinks. Measured (one instance's region, tritonserver 2.51; docs/deployment.md):

* at load, and with small tensors at any concurrency: 1 MiB (the 1,048,576-byte start size);
* AddSub, 4 x 0.25 MiB tensors per request: 2 MiB at concurrency 1, 10 MiB at concurrency 8;
* AddSub, 4 x 1 MiB tensors per request: 36-37 MiB at concurrency 8;
* an FP32 echo of 4 MB ("Shared memory" there): 11 MiB at concurrency 1, 76-106 MiB at concurrency 16.

That is about 1 MiB + in-flight requests x (inputs + outputs), which 25% more covers in every case.
So each instance is given its start region plus :data:`SHM_TENSOR_ROOM` for a batch's tensors (16 MiB
in all), the sum gets 25% headroom, rounded up to 16 MiB and at least 64 MiB. A memory-backed
``emptyDir`` counts against the container's memory limit, so both numbers are computed together.
Bigger tensors: ``--shm-size``. The arithmetic is spelled out in docs/deployment.md.
"""

from __future__ import annotations

import math
import re

from ..errors import UsageError
from ..ondisk.repository import BuiltRepository

__all__ = [
    "SHM_GROWTH",
    "SHM_PER_INSTANCE",
    "SHM_REGION_START",
    "SHM_TENSOR_ROOM",
    "MiB",
    "format_quantity",
    "parse_quantity",
    "shm_size_bytes",
]

MiB = 1 << 20
GiB = 1 << 30
SHM_REGION_START = 1 * MiB
"""The Python backend's ``shm-default-byte-size``: each stub's region at load (1,048,576 bytes measured)."""
SHM_GROWTH = 1 * MiB
"""The Python backend's ``shm-growth-byte-size``: the step a region grows by to hold a batch's tensors."""
SHM_TENSOR_ROOM = 15 * SHM_GROWTH
"""Room per instance for the tensors in flight: one 4 MB-in, 4 MB-out request (11 MiB measured), or 8 of 1 MiB."""
SHM_PER_INSTANCE = SHM_REGION_START + SHM_TENSOR_ROOM
SHM_HEADROOM = 1.25
SHM_STEP = 16 * MiB
SHM_MINIMUM = 64 * MiB

_SUFFIXES = {
    "Ki": 1 << 10, "Mi": MiB, "Gi": GiB, "Ti": 1 << 40,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T|)$")


def shm_size_bytes(info: BuiltRepository, gpus: int = 1) -> int:
    """``/dev/shm`` for ``info``: :data:`SHM_PER_INSTANCE` per Python instance, +25%, in 16 MiB steps, >= 64 MiB."""
    needed = info.python_instances(gpus) * SHM_PER_INSTANCE * SHM_HEADROOM
    return max(math.ceil(needed / SHM_STEP) * SHM_STEP, SHM_MINIMUM)


def parse_quantity(text: str, what: str) -> int:
    """A Kubernetes memory quantity (``512Mi``, ``2Gi``, ``1G``) in bytes."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise UsageError(
            f"{what} {text!r} is not a memory quantity; expected a number with an optional unit "
            "(Ki, Mi, Gi, Ti, k, M, G, T), e.g. 512Mi or 4Gi."
        )
    return int(float(match[1]) * _SUFFIXES[match[2]])


def format_quantity(size: int) -> str:
    """Bytes → ``NGi`` when whole gibibytes, else ``NMi`` (rounded up)."""
    if size % GiB == 0:
        return f"{size // GiB}Gi"
    return f"{math.ceil(size / MiB)}Mi"
