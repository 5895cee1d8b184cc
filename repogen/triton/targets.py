"""Which Python and numpy a stock NGC ``tritonserver`` container serves a model with.

A portable build (the default) is checked against the Python of every container it targets: all
of them from 23.10 (Python 3.10 and 3.12), or the one ``--target-triton`` names. A build pinned to
its own Python (``--pin-python``) carries bytecode, which only loads under the Python minor that
wrote it, so ``--target-triton`` then refuses a mismatched interpreter *before* any user code is
imported. The target is recorded in every ``model.json`` and in the manifest.

Sources: the NGC release notes (``tritonserver`` 2.N.0 ships as NGC ``yy.mm``, one number per month
from 2.39.0 = 23.10), and the design notes checked on the stock containers: 23.10-24.10 ship Python
3.10, 24.12 and later ship Python 3.12 (Ubuntu 24.04), all ship numpy 1.26.4. 24.11 is the last
release on Ubuntu 22.04 and is listed with Python 3.10.
"""

from __future__ import annotations

import dataclasses
import sys

from ..errors import BuildError
from .releases import RELEASES

__all__ = ["TARGETS", "Targets", "TritonTarget", "check_interpreter", "get_target", "resolve_targets"]

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
    """Refuse a pinned build for ``target`` from another Python minor: its stub could not load the bytecode.

    Checked before the app is imported, so the user learns it in a second, not after a long build.
    """
    python = python or current_python()
    if python == target.python:
        return
    raise BuildError(
        f"--target-triton {target.ngc} (tritonserver {target.tritonserver}, {target.image}) serves models with "
        f"Python {target.python}, but this --pin-python build runs on Python {python}; pinned code only loads on "
        f"the Python minor version that wrote it. Drop --pin-python (the default build ships source and serves on "
        f"any Python from 3.10), or build with a Python {target.python} interpreter (e.g. "
        f"`python{target.python} -m repogen build ...` in a Python {target.python} virtualenv)"
    )


def python_key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@dataclasses.dataclass(frozen=True)
class Targets:
    """The containers a build must serve on, and whether its payloads are pinned to the build's Python."""

    containers: tuple[TritonTarget, ...]
    narrowed: bool = False
    """True when ``--target-triton`` named one container (recorded in ``model.json`` as ``target``)."""
    pinned: str | None = None
    """The build's Python minor when payloads carry its bytecode (``--pin-python``) instead of source."""

    @property
    def pythons(self) -> tuple[str, ...]:
        """The Python minors the payloads must load on, oldest first."""
        if self.pinned:
            return (self.pinned,)
        return tuple(sorted({c.python for c in self.containers}, key=python_key))

    def oldest_with(self, python: str) -> TritonTarget | None:
        """The oldest release (of all, not only the targeted) whose Python is ``python`` or newer."""
        return next((t for t in TARGETS if python_key(t.python) >= python_key(python)), None)

    def describe(self, python: str) -> str:
        """``NGC 23.10-24.11`` for the targeted containers that serve with ``python``."""
        ngcs = [c.ngc for c in self.containers if c.python == python]
        span = ngcs[0] if len(ngcs) == 1 else f"{ngcs[0]}-{ngcs[-1]}"
        return f"NGC {span} (Python {python})"

    def record(self) -> dict[str, str] | None:
        return self.containers[0].record() if self.narrowed else None


def resolve_targets(target_triton: str | TritonTarget | None = None, *, pin_python: bool = False) -> Targets:
    """Every container from 23.10, or the one named; a pinned build must run on that container's Python."""
    pinned = current_python() if pin_python else None
    if target_triton is None:
        return Targets(tuple(t for t in TARGETS if not pinned or t.python == pinned), pinned=pinned)
    target = target_triton if isinstance(target_triton, TritonTarget) else get_target(target_triton)
    if pin_python:
        check_interpreter(target)
    return Targets((target,), narrowed=True, pinned=pinned)
