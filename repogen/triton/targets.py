"""Which NGC containers a build must serve on, and the Python their backend stubs run.

A portable build (the default) is checked against the Python of every container it targets: all
of them from 23.10 (Python 3.10 and 3.12), or the one ``--triton-release`` names. When the packages a
default build ships cannot reach some containers (no wheel for their Python, a CUDA major they lack),
the build narrows to the ones they reach and says so (:meth:`Targets.without`); ``--all-containers``
(``required``) makes that an error instead. A build pinned to its own Python (``--pin-python``) carries
bytecode, which only loads under the Python minor that wrote it, so a named release then refuses a
mismatched interpreter *before* any user code is imported. The target is recorded in every
``model.json`` and in the manifest.

The facts about each container come from :mod:`repogen.triton.releases`, the one release table.
"""

from __future__ import annotations

import dataclasses
import sys

from ..errors import BuildError, UnknownReleaseError
from .releases import RELEASES, Release, get_release

__all__ = [
    "TARGETS",
    "Targets",
    "TritonTarget",
    "check_interpreter",
    "current_python",
    "get_target",
    "python_key",
    "resolve_targets",
]

TritonTarget = Release
"""A build target is a release row (the name the build side has always used)."""

TARGETS: tuple[Release, ...] = RELEASES


def get_target(key: str | Release) -> Release:
    """:func:`~repogen.triton.releases.get_release`, raising :class:`BuildError` (a build's own error)."""
    try:
        return get_release(key)
    except UnknownReleaseError as exc:
        raise BuildError(str(exc)) from exc


def current_python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def check_interpreter(target: Release, python: str | None = None) -> None:
    """Refuse a pinned build for ``target`` from another Python minor: its stub could not load the bytecode.

    Checked before the app is imported, so the user learns it in a second, not after a long build.
    """
    python = python or current_python()
    if python == target.python:
        return
    raise BuildError(
        f"--triton-release {target.ngc} (tritonserver {target.tritonserver}, {target.image}) serves models with "
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

    containers: tuple[Release, ...]
    narrowed: bool = False
    """True when ``--triton-release`` named one container (recorded in ``model.json`` as ``target``)."""
    pinned: str | None = None
    """The build's Python minor when payloads carry its bytecode (``--pin-python``) instead of source."""
    required: bool = False
    """``--all-containers``: a container the packages cannot reach fails the build instead of being left out."""

    @property
    def may_narrow(self) -> bool:
        """Whether containers the packages cannot reach are left out (with a warning) rather than an error."""
        return not (self.narrowed or self.required)

    def without(self, containers: tuple[Release, ...]) -> Targets | None:
        """These targets less ``containers``; None when nothing would be left."""
        left = tuple(c for c in self.containers if c not in containers)
        return dataclasses.replace(self, containers=left) if left else None

    def span(self, containers: tuple[Release, ...] | None = None) -> str:
        """``NGC 23.10-24.10 (Python 3.10), 24.11-26.11 (Python 3.12)``: contiguous runs of ``containers``."""
        chosen = self.containers if containers is None else containers
        runs: list[list[Release]] = []
        for release in chosen:
            index = TARGETS.index(release) if release in TARGETS else -1
            last = runs[-1][-1] if runs else None
            if last is not None and last.python == release.python and TARGETS.index(last) == index - 1:
                runs[-1].append(release)
            else:
                runs.append([release])
        parts = [f"{r[0].ngc}-{r[-1].ngc}" if len(r) > 1 else r[0].ngc for r in runs]
        return "NGC " + ", ".join(f"{p} (Python {r[0].python})" for p, r in zip(parts, runs, strict=True))

    @property
    def pythons(self) -> tuple[str, ...]:
        """The Python minors the payloads must load on, oldest first."""
        if self.pinned:
            return (self.pinned,)
        return tuple(sorted({c.python for c in self.containers}, key=python_key))

    def oldest_with(self, python: str) -> Release | None:
        """The oldest release (of all, not only the targeted) whose Python is ``python`` or newer."""
        return next((t for t in TARGETS if python_key(t.python) >= python_key(python)), None)

    def describe(self, python: str) -> str:
        """``NGC 23.10-24.10 (Python 3.10)`` for the targeted containers that serve with ``python``."""
        return self.span(tuple(c for c in self.containers if c.python == python))

    def record(self) -> dict[str, str | int | bool] | None:
        return self.containers[0].record() if self.narrowed else None


def resolve_targets(
    release: str | Release | None = None, *, pin_python: bool = False, all_containers: bool = False
) -> Targets:
    """Every container from 23.10, or the one named; a pinned build must run on that container's Python.

    ``all_containers`` requires every container: packages that cannot reach one fail the build.
    """
    pinned = current_python() if pin_python else None
    if release is None:
        containers = tuple(t for t in TARGETS if not pinned or t.python == pinned)
        return Targets(containers, pinned=pinned, required=all_containers)
    if all_containers:
        raise BuildError(
            "--all-containers requires every NGC container from 23.10, but --triton-release names one; pass one "
            "or the other"
        )
    target = get_target(release)
    if pin_python:
        check_interpreter(target)
    return Targets((target,), narrowed=True, pinned=pinned)
