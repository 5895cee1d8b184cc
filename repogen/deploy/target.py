"""The NGC ``tritonserver`` container a deployment targets, and the Python it serves with.

Known releases come from :mod:`repogen.server.releases`; any other ``yy.mm`` NGC release is
accepted too (deployments need no wheel), with its Python inferred from NVIDIA's published
pattern: 23.10–24.10 ship Python 3.10, 24.12 and later ship 3.12.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..server.releases import DEFAULT_RELEASE, get_release
from .repository import DeployError

__all__ = ["DEFAULT_NGC", "NgcTarget", "ngc_target"]

DEFAULT_NGC = DEFAULT_RELEASE.ngc
IMAGE_REPOSITORY = "nvcr.io/nvidia/tritonserver"
_NGC = re.compile(r"^(\d\d)\.(\d\d)$")


@dataclass(frozen=True)
class NgcTarget:
    ngc: str
    """``yy.mm``."""
    python: str | None
    """Python ``major.minor`` of the container's backend stub, when known."""

    @property
    def tag(self) -> str:
        return f"{self.ngc}-py3"

    @property
    def image(self) -> str:
        return f"{IMAGE_REPOSITORY}:{self.tag}"


def _guess_python(year: int, month: int) -> str | None:
    if (year, month) >= (24, 12):
        return "3.12"
    if (year, month) >= (23, 10):
        return "3.10"
    return None


def ngc_target(key: str) -> NgcTarget:
    """``24.10``/``r24.10``/``24.10-py3``/``2.51.0`` → the NGC container to deploy on."""
    try:
        release = get_release(key)
    except LookupError:
        pass
    else:
        return NgcTarget(release.ngc, release.container_python)
    wanted = key.strip().lower().removesuffix("-py3").lstrip("rv")
    match = _NGC.match(wanted)
    if not match:
        raise DeployError(
            f"--triton-version {key!r} is neither a known tritonserver version nor an NGC release; "
            f"expected an NGC release like {DEFAULT_NGC} (nvcr.io/nvidia/tritonserver:<release>-py3) "
            f"or a tritonserver version like {DEFAULT_RELEASE.tritonserver}."
        )
    year, month = int(match[1]), int(match[2])
    return NgcTarget(wanted, _guess_python(year, month))
