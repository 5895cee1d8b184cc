"""The Python backend's shared memory: what each stub's region grows to, and what ``/dev/shm`` must hold.

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
in all), the sum gets 25% headroom, rounded up to 16 MiB and at least 64 MiB.
Bigger tensors: ``--shm-size``. The arithmetic is spelled out in docs/deployment.md; the deployment files
(``repogen deploy``) and ``repogen serve --image`` size ``/dev/shm`` with :func:`shm_size_bytes`.
"""

from __future__ import annotations

import math

__all__ = ["SHM_GROWTH", "SHM_PER_INSTANCE", "SHM_REGION_START", "SHM_TENSOR_ROOM", "shm_size_bytes"]

_MiB = 1 << 20
SHM_REGION_START = 1 * _MiB
"""The Python backend's ``shm-default-byte-size``: each stub's region at load (1,048,576 bytes measured)."""
SHM_GROWTH = 1 * _MiB
"""The Python backend's ``shm-growth-byte-size``: the step a region grows by to hold a batch's tensors."""
SHM_TENSOR_ROOM = 15 * SHM_GROWTH
"""Room per instance for the tensors in flight: one 4 MB-in, 4 MB-out request (11 MiB measured), or 8 of 1 MiB."""
SHM_PER_INSTANCE = SHM_REGION_START + SHM_TENSOR_ROOM
SHM_HEADROOM = 1.25
SHM_STEP = 16 * _MiB
SHM_MINIMUM = 64 * _MiB


def shm_size_bytes(python_instances: int) -> int:
    """``/dev/shm`` for that many Python model instances: :data:`SHM_PER_INSTANCE` each, +25%, in 16 MiB steps,
    at least 64 MiB."""
    needed = python_instances * SHM_PER_INSTANCE * SHM_HEADROOM
    return max(math.ceil(needed / SHM_STEP) * SHM_STEP, SHM_MINIMUM)
