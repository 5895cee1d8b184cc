"""Kubernetes resource quantities: memory sizes as the deployment files write them and ``--memory-limit`` takes them.

``/dev/shm``'s size comes from :mod:`repogen.triton.shm`; a memory-backed ``emptyDir`` counts against the
container's memory limit, so kubernetes.py computes both numbers together.
"""

from __future__ import annotations

import math
import re

from ..errors import UsageError
from ..ondisk.reader import BuiltRepository

__all__ = ["GiB", "MiB", "docker_gpus", "format_quantity", "parse_quantity"]

MiB = 1 << 20
GiB = 1 << 30

_SUFFIXES = {
    "Ki": 1 << 10, "Mi": MiB, "Gi": GiB, "Ti": 1 << 40,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "": 1,
}  # fmt: skip
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T|)$")


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


def docker_gpus(info: BuiltRepository, gpus: int | None) -> str:
    """``docker run``'s ``--gpus`` for a repository with KIND_GPU models (``--gpus N``: N of them, else all)."""
    if not info.uses_gpu:
        return ""
    return f"--gpus {gpus} " if gpus else "--gpus all "
