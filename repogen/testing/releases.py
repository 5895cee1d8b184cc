"""Which tritonserver release the tests run against, and skipping what an older one cannot do.

The integration suite runs against every release in :data:`repogen.server.releases.RELEASES`
(``REPOGEN_TRITON_VERSION`` picks one). A test that needs a newer server skips with a reason that
names the release it needs, so a run on 2.39 reports *why* it did less instead of failing::

    from repogen.testing.releases import requires_release

    @requires_release("2.41.0", "request parameters() arrived in the 2.41 Python backend")
    def test_parameters(server): ...

pytest is imported inside :func:`requires_release` only, so importing this module never imports
pytest before its assertion rewriting is set up.
"""

from __future__ import annotations

import os
from typing import Any

from repogen.server.releases import DEFAULT_RELEASE, TritonRelease, get_release

__all__ = ["RELEASE_ENV", "release_at_least", "release_under_test", "requires_release", "version_tuple"]

RELEASE_ENV = "REPOGEN_TRITON_VERSION"


def release_under_test() -> TritonRelease:
    """The release ``$REPOGEN_TRITON_VERSION`` names (any spelling ``get_release`` accepts), else the default."""
    wanted = os.environ.get(RELEASE_ENV, "").strip()
    return get_release(wanted) if wanted else DEFAULT_RELEASE


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.41.0"`` → ``(2, 41, 0)``: compare releases numerically, never as strings ("2.9" < "2.41")."""
    return tuple(int(part) for part in version.split("."))


def release_at_least(minimum: str, release: TritonRelease | None = None) -> bool:
    """Whether ``release`` (default: the one under test) is ``minimum`` or newer.

    ``minimum`` is a tritonserver version or an NGC ``yy.mm``, as :func:`get_release` accepts.
    """
    current = release or release_under_test()
    return version_tuple(current.tritonserver) >= version_tuple(get_release(minimum).tritonserver)


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
