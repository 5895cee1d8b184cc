"""The NGC ``tritonserver`` container a deployment targets, and the Python it serves with.

The facts come from :mod:`repogen.triton.targets`, the one table of NGC releases and their Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..deploy.repository import DeployError
from ..errors import BuildError
from .releases import DEFAULT_RELEASE
from .targets import container_python, get_target

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


def ngc_target(key: str) -> NgcTarget:
    """``24.10``/``r24.10``/``24.10-py3``/``2.51.0`` → the NGC container to deploy on.

    Releases in :data:`repogen.triton.targets.TARGETS` come from that table; a newer ``yy.mm`` is accepted
    too (deployments need no wheel), with the table's rule for its Python.
    """
    try:
        target = get_target(key)
    except BuildError:
        pass
    else:
        return NgcTarget(target.ngc, target.python)
    wanted = key.strip().lower().removesuffix("-py3").lstrip("rv")
    match = _NGC.match(wanted)
    if not match:
        raise DeployError(
            f"--triton-version {key!r} is neither a known tritonserver version nor an NGC release; "
            f"expected an NGC release like {DEFAULT_NGC} (nvcr.io/nvidia/tritonserver:<release>-py3) "
            f"or a tritonserver version like {DEFAULT_RELEASE.tritonserver}."
        )
    return NgcTarget(wanted, container_python(2000 + int(match[1]), int(match[2])))
