"""Which serving pairing the tests run against, and skipping what an older server cannot do.

A *pairing* is a tritonserver release plus the Python its backend stub runs: production is an NGC
container, and each container fixes both (2.39/2.41/2.51 + Python 3.10 are NGC 23.10/23.12/24.10;
2.51 + Python 3.12 stands in for 24.11+). ``REPOGEN_TRITON_RELEASE`` picks the release (default
2.51.0; its former name ``REPOGEN_TRITON_VERSION`` still does, with a warning) and ``REPOGEN_SERVER_PYTHON``
the Python (default: the release's container Python).

A test that needs a newer server skips with a reason that names the release it needs, so a run on
2.39 reports *why* it did less instead of failing::

    from repogen.testing.server_under_test import requires_release

    @requires_release("2.41.0", "request parameters() arrived in the 2.41 Python backend")
    def test_parameters(server): ...

pytest is imported inside :func:`requires_release` only, so importing this module never imports
pytest before its assertion rewriting is set up.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

from repogen.triton.releases import DEFAULT_RELEASE, EMBEDDED, Release, get_release, pairing_label, version_tuple

__all__ = [
    "FORMER_RELEASE_ENV",
    "PYTHON_ENV",
    "RELEASE_ENV",
    "Pairing",
    "pairing_under_test",
    "release_at_least",
    "release_under_test",
    "requires_release",
    "version_tuple",
]

RELEASE_ENV = "REPOGEN_TRITON_RELEASE"
FORMER_RELEASE_ENV = "REPOGEN_TRITON_VERSION"
"""``RELEASE_ENV``'s name before a Triton release was called a release everywhere: still read, with a warning."""
PYTHON_ENV = "REPOGEN_SERVER_PYTHON"


@dataclass(frozen=True)
class Pairing:
    """A tritonserver release and the Python ``major.minor`` its backend stub runs models with."""

    release: Release
    python: str

    @property
    def label(self) -> str:
        """E.g. ``"tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"``."""
        return pairing_label(self.release, self.python)


def release_under_test() -> Release:
    """The release ``$REPOGEN_TRITON_RELEASE`` names (any spelling ``get_release`` accepts), else the default.

    Raises ``ValueError`` for a release no PyPI wheel ships (the tests can only install those).
    """
    wanted = _wanted_release()
    release = get_release(wanted) if wanted else DEFAULT_RELEASE
    if release.wheel is None:
        embedded = " or ".join(r.tritonserver for r in EMBEDDED)
        raise ValueError(f"{RELEASE_ENV}={wanted}: {release.label} has no PyPI wheel to test with; use {embedded}")
    return release


def _wanted_release() -> str:
    """``$REPOGEN_TRITON_RELEASE``, else its former name's value (with a ``DeprecationWarning``), else ``""``."""
    wanted = os.environ.get(RELEASE_ENV, "").strip()
    former = os.environ.get(FORMER_RELEASE_ENV, "").strip()
    if former and not wanted:
        warnings.warn(f"${FORMER_RELEASE_ENV} is deprecated; use ${RELEASE_ENV}", DeprecationWarning, stacklevel=3)
        return former
    return wanted


def pairing_under_test() -> Pairing:
    """The release under test and ``$REPOGEN_SERVER_PYTHON`` (default: that release's container Python).

    Raises ``ValueError`` for a Python that is not ``major.minor`` or has no backend stub in the release's wheel.
    """
    release = release_under_test()
    python = os.environ.get(PYTHON_ENV, "").strip() or release.python
    if not re.fullmatch(r"3\.\d+", python):
        raise ValueError(f"{PYTHON_ENV}={python!r}: expected a Python major.minor such as 3.10 or 3.12")
    if python not in release.stub_pythons:
        others = [r.tritonserver for r in EMBEDDED if python in r.stub_pythons]
        elsewhere = f"or {RELEASE_ENV}={' or '.join(others)}" if others else f"no release ships a Python {python} stub"
        raise ValueError(
            f"{PYTHON_ENV}={python}: tritonserver {release.tritonserver} (NGC {release.ngc}) has backend stubs "
            f"for Python {', '.join(release.stub_pythons)} only. Pick one of those ({elsewhere})."
        )
    return Pairing(release, python)


def release_at_least(minimum: str, release: Release | None = None) -> bool:
    """Whether ``release`` (default: the one under test) is ``minimum`` or newer.

    ``minimum`` is a tritonserver version or an NGC ``yy.mm``, as :func:`get_release` accepts.
    """
    current = release or release_under_test()
    return current.version >= get_release(minimum).version


def requires_release(minimum: str, why: str) -> Any:
    """A pytest mark skipping the test below tritonserver ``minimum``, with a reason naming both releases."""
    import pytest

    needed = get_release(minimum)
    current = release_under_test()
    return pytest.mark.skipif(
        not release_at_least(minimum, current),
        reason=(
            f"needs tritonserver {needed.tritonserver} (NGC {needed.ngc}) or newer, testing "
            f"{current.tritonserver} (NGC {current.ngc}): {why}"
        ),
    )
