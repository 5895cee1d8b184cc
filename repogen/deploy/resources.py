"""Sizing: ``/dev/shm`` for the Python backend and Kubernetes resource quantities.

Every Python model instance is a stub process that exchanges tensors with the server through
``/dev/shm`` (about 64 MiB each by default). Docker's 64 MB default and an unsized Kubernetes
pod run out as soon as a repository has more than one model, and a memory-backed ``emptyDir``
counts against the container's memory limit, so both numbers are computed together here.
"""

from __future__ import annotations

import math
import re

from ..built.repository import BuiltRepository
from ..errors import DeployError

__all__ = ["MiB", "format_quantity", "parse_quantity", "shm_size_bytes"]

MiB = 1 << 20
GiB = 1 << 30
SHM_PER_INSTANCE = 64 * MiB
SHM_MINIMUM = 128 * MiB
"""Headroom: 25% plus 64 MiB, rounded up to 64 MiB, never below 128 MiB."""

_SUFFIXES = {
    "Ki": 1 << 10, "Mi": MiB, "Gi": GiB, "Ti": 1 << 40,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T|)$")


def shm_size_bytes(info: BuiltRepository, gpus: int = 1) -> int:
    """``/dev/shm`` for ``info``: 64 MiB per Python model instance plus headroom."""
    needed = info.python_instances(gpus) * SHM_PER_INSTANCE
    size = math.ceil((needed * 1.25 + 64 * MiB) / (64 * MiB)) * 64 * MiB
    return max(size, SHM_MINIMUM)


def parse_quantity(text: str, what: str) -> int:
    """A Kubernetes memory quantity (``512Mi``, ``2Gi``, ``1G``) in bytes."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise DeployError(
            f"{what} {text!r} is not a memory quantity; expected a number with an optional unit "
            "(Ki, Mi, Gi, Ti, k, M, G, T), e.g. 512Mi or 4Gi."
        )
    return int(float(match[1]) * _SUFFIXES[match[2]])


def format_quantity(size: int) -> str:
    """Bytes → ``NGi`` when whole gibibytes, else ``NMi`` (rounded up)."""
    if size % GiB == 0:
        return f"{size // GiB}Gi"
    return f"{math.ceil(size / MiB)}Mi"
