"""Which embedded pairing serves a repository, from the targets its build recorded.

The embedded server is 2.51 (NGC 24.10) on Python 3.10 by default; a repository whose packages ship
for Python 3.12 only (today's scikit-learn, numpy and scipy have no 3.10 wheels, so a default build
targets the 3.12 containers, 24.11 and later) would fail to load there. ``repogen serve`` therefore
reads the manifest: the release it was built for when that release is embeddable, else the newest
embedded release with a backend stub for the Python the repository needs, and says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import ServeError
from ...ondisk.compatibility import serving
from ...ondisk.reader import read_manifest
from ...triton.releases import DEFAULT_RELEASE, EMBEDDED, Release, get_release, pairing_label


@dataclass(frozen=True)
class Pairing:
    release: Release
    python: str
    why: str


def _stub_for(python: str, needed_by: str) -> Release:
    """The newest embedded release with a backend stub for ``python``; the error names what would serve it."""
    for release in reversed(EMBEDDED):
        if python in release.stub_pythons:
            return release
    raise ServeError(
        f"{needed_by}, but no embedded tritonserver ({', '.join(r.tritonserver for r in EMBEDDED)}) has a Python "
        f"backend stub for Python {python}. Serve it in a container whose tritonserver runs Python {python} "
        "(--tritonserver PATH, or `repogen deploy --docker`)"
    )


def pairing_for(repository: Path) -> Pairing | None:
    """The pairing the repository's records ask for; None when the default one (2.51 + 3.10) serves it."""
    manifest = read_manifest(repository) or {}
    if not manifest:
        return None  # a repository repogen did not build: nothing recorded, nothing to choose by
    build = manifest.get("build") or {}
    if not manifest.get("portable", True) and build.get("python"):
        python = str(build["python"])
        if python == DEFAULT_RELEASE.python:
            return None
        release = _stub_for(python, f"{repository} was built with --pin-python on Python {python}")
        return Pairing(release, python, f"{repository} was built with --pin-python on Python {python}")
    target = manifest.get("target")
    if isinstance(target, dict) and target.get("ngc"):
        named = get_release(str(target["ngc"]))
        if named == DEFAULT_RELEASE:
            return None
        if named in EMBEDDED:
            return Pairing(named, named.python, f"{repository} was built for {named.label}")
        release = _stub_for(named.python, f"{repository} was built for {named.label}")
        return Pairing(
            release,
            named.python,
            f"{repository} was built for {named.label}, which no PyPI wheel ships; "
            f"{pairing_label(release, named.python)} runs the same Python",
        )
    pythons = [str(p) for p in manifest.get("pythons") or ()]
    if not pythons or DEFAULT_RELEASE.python in pythons:
        return None
    python = pythons[-1]
    why = f"{repository} ships for {serving(pythons)} only"
    return Pairing(_stub_for(python, why), python, why)
