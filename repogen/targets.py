"""Which Python and numpy a stock NGC ``tritonserver`` container serves a model with.

cloudpickle payloads only load under the Python minor version that wrote them, so a build aimed
at ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3`` must run on that container's Python. This table lets
``repogen build --target-triton 24.10`` refuse a mismatched interpreter *before* any user code is
imported, and records the target in every ``model.json`` and in the manifest.

Sources: the NGC release notes (``tritonserver`` 2.N.0 ships as NGC ``yy.mm``, one number per month
from 2.39.0 = 23.10), and the design notes checked on the stock containers: 23.10-24.10 ship Python
3.10, 24.12 and later ship Python 3.12 (Ubuntu 24.04), all ship numpy 1.26.4. 24.11 is the last
release on Ubuntu 22.04 and is listed with Python 3.10.
"""

from __future__ import annotations

import dataclasses
import sys

from .errors import BuildError
from .server.releases import RELEASES

__all__ = ["TARGETS", "TritonTarget", "check_interpreter", "get_target"]

_FIRST_MINOR = 39  # tritonserver 2.39.0 is NGC 23.10, the oldest release repogen supports
_FIRST_MONTH = (2023, 10)
_LAST_MONTH = (2025, 10)
_PYTHON_312_FROM = (2024, 12)
_NUMPY = "1.26.4"


@dataclasses.dataclass(frozen=True)
class TritonTarget:
    """One NGC tritonserver container: what a model built for it must match."""

    ngc: str
    """NGC release ``yy.mm`` (``nvcr.io/nvidia/tritonserver:<ngc>-py3``)."""
    tritonserver: str
    """The ``tritonserver`` version inside, e.g. ``2.51.0``."""
    python: str
    """Python ``major.minor`` of the container's backend stub."""
    numpy: str
    """numpy installed in the container."""

    @property
    def image(self) -> str:
        return f"nvcr.io/nvidia/tritonserver:{self.ngc}-py3"

    def record(self) -> dict[str, str]:
        """What a build writes into ``model.json`` and the manifest under ``"target"``."""
        return {"image": self.image, "ngc": self.ngc, "numpy": self.numpy, "python": self.python,
                "tritonserver": self.tritonserver}  # fmt: skip


def container_python(year: int, month: int) -> str | None:
    """NVIDIA's published pattern, also for releases newer than the table; None before 23.10."""
    if (year, month) < _FIRST_MONTH:
        return None
    return "3.12" if (year, month) >= _PYTHON_312_FROM else "3.10"


def _months() -> list[tuple[int, int]]:
    year, month = _FIRST_MONTH
    months = []
    while (year, month) <= _LAST_MONTH:
        months.append((year, month))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def _table() -> tuple[TritonTarget, ...]:
    """One row per monthly release; releases with a PyPI wheel take their facts from ``server.releases``."""
    known = {release.ngc: release for release in RELEASES}
    rows = []
    for index, (year, month) in enumerate(_months()):
        ngc = f"{year % 100:02d}.{month:02d}"
        python = container_python(year, month)
        assert python is not None
        release = known.get(ngc)
        if release is not None:
            rows.append(TritonTarget(ngc, release.tritonserver, release.container_python, release.container_numpy))
        else:
            rows.append(TritonTarget(ngc, f"2.{_FIRST_MINOR + index}.0", python, _NUMPY))
    return tuple(rows)


TARGETS: tuple[TritonTarget, ...] = _table()


def _normalize(key: str) -> str:
    """Accept what people paste: ``24.10``, ``r24.10``, ``24.10-py3``, ``2.51.0``, ``v2.51``, the image name."""
    key = key.strip().lower().rsplit(":", 1)[-1].removesuffix("-py3")
    return key[1:] if key[:1] in ("r", "v") else key


def get_target(key: str) -> TritonTarget:
    """The container for an NGC release (``24.10``) or tritonserver version (``2.51.0``/``2.51``)."""
    wanted = _normalize(key)
    for target in TARGETS:
        if wanted in (target.ngc, target.tritonserver, target.tritonserver.rsplit(".", 1)[0]):
            return target
    raise BuildError(
        f"unknown Triton release {key!r} for --target-triton; expected an NGC release from {TARGETS[0].ngc} to "
        f"{TARGETS[-1].ngc} (e.g. 24.10) or its tritonserver version (e.g. 2.51.0)"
    )


def current_python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def check_interpreter(target: TritonTarget, python: str | None = None) -> None:
    """Refuse to build for ``target`` from another Python minor: its stub could not load the pickles.

    Checked before the app is imported, so the user learns it in a second, not after a long build.
    """
    python = python or current_python()
    if python == target.python:
        return
    raise BuildError(
        f"--target-triton {target.ngc} (tritonserver {target.tritonserver}, {target.image}) serves models with "
        f"Python {target.python}, but this build runs on Python {python}; pickled code only loads on the Python "
        f"minor version that wrote it. Build with a Python {target.python} interpreter (e.g. "
        f"`python{target.python} -m repogen build ...` in a Python {target.python} virtualenv), or let "
        f"`repogen deploy --docker` build inside {target.image}, which uses that image's Python"
    )
