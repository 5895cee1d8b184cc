"""Known stock tritonserver releases and the PyPI wheels that ship them.

The ``nvidia-pytriton`` wheel carries an unmodified ``tritonserver`` binary, the Python
backend and backend stubs; it is how repogen runs a real server without Docker. The
sha256 of each wheel is pinned here and checked at install time, so a tampered or
re-uploaded wheel is refused instead of silently served.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_RELEASE", "LATER_CONTAINER_PYTHON", "RELEASES", "TritonRelease", "get_release", "pairing_label"]


@dataclass(frozen=True)
class TritonRelease:
    """One tritonserver release, the NGC container it matches and the wheel carrying it."""

    tritonserver: str
    """tritonserver version, e.g. ``"2.51.0"``."""
    ngc: str
    """NGC container release ``yy.mm``, e.g. ``"24.10"`` (``nvcr.io/nvidia/tritonserver:24.10-py3``)."""
    pytriton: str
    """``nvidia-pytriton`` wheel version that ships this server."""
    wheel_filename: str
    wheel_sha256: str
    container_python: str
    """Python ``major.minor`` of the NGC container's backend stub (what production serves with)."""
    stub_pythons: tuple[str, ...]
    """Python ``major.minor`` versions with a backend stub inside the wheel."""
    container_numpy: str = "1.26.4"
    """numpy version installed in the NGC container."""
    platform: str = "x86_64"
    """Machine architecture of :attr:`wheel_filename`."""

    @property
    def ngc_image(self) -> str:
        """The matching stock container image."""
        return f"nvcr.io/nvidia/tritonserver:{self.ngc}-py3"

    @property
    def pip_requirement(self) -> str:
        return f"nvidia-pytriton=={self.pytriton}"


_PY_38_311 = ("3.8", "3.9", "3.10", "3.11")

RELEASES: tuple[TritonRelease, ...] = (
    TritonRelease(
        tritonserver="2.39.0",
        ngc="23.10",
        pytriton="0.4.2",
        wheel_filename="nvidia_pytriton-0.4.2-py3-none-manylinux_2_35_x86_64.whl",
        wheel_sha256="8f79e8bda28961a49d5c64474c17664e10b1bb08018b7ee7bcbd81bcff86e266",
        container_python="3.10",
        stub_pythons=_PY_38_311,
    ),
    TritonRelease(
        tritonserver="2.41.0",
        ngc="23.12",
        pytriton="0.5.0",
        wheel_filename="nvidia_pytriton-0.5.0-py3-none-manylinux_2_35_x86_64.whl",
        wheel_sha256="f46a3c03fb0893948f57c1d5470998a6f403f2c8036d7af944c817a8fba31a46",
        container_python="3.10",
        stub_pythons=_PY_38_311,
    ),
    TritonRelease(
        tritonserver="2.51.0",
        ngc="24.10",
        pytriton="0.7.0",
        wheel_filename="nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl",
        wheel_sha256="21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df",
        container_python="3.10",
        stub_pythons=(*_PY_38_311, "3.12", "3.13"),
    ),
)


def _normalize(key: str) -> str:
    """Accept the spellings people paste: ``r24.10``, ``24.10-py3``, ``v2.51.0``, ``2.51``."""
    key = key.strip().lower()
    key = key.removesuffix("-py3")
    if key[:1] in ("r", "v"):
        key = key[1:]
    return key


def get_release(key: str | TritonRelease) -> TritonRelease:
    """Find a release by tritonserver version (``2.51.0``/``2.51``) or NGC release (``24.10``)."""
    if isinstance(key, TritonRelease):
        return key
    wanted = _normalize(key)
    for release in RELEASES:
        names = {release.tritonserver, release.tritonserver.rsplit(".", 1)[0], release.ngc}
        if wanted in names:
            return release
    known = ", ".join(f"{r.tritonserver} (NGC {r.ngc})" for r in RELEASES)
    raise LookupError(
        f"unknown tritonserver release {key!r}; known releases: {known}. "
        "Pass one of these tritonserver versions or NGC releases (e.g. REPOGEN_TRITON_VERSION=2.51.0)."
    )


DEFAULT_RELEASE: TritonRelease = get_release("2.51.0")


LATER_CONTAINER_PYTHON = ("3.12", "24.12")
"""NGC 24.12 and later serve Python 3.12; no wheel ships those servers, so 2.51 + 3.12 stands in for them."""


def pairing_label(release: TritonRelease, python: str) -> str:
    """``"tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"``: a server release and the Python its stub runs.

    Says which NGC container runs that pairing, or that none does, so a log shows what was tested.
    """
    head = f"tritonserver {release.tritonserver} + Python {python}"
    if python == release.container_python:
        return f"{head} (NGC {release.ngc})"
    later_python, later_ngc = LATER_CONTAINER_PYTHON
    if python == later_python:
        return f"{head} (stands in for NGC {later_ngc}+)"
    return f"{head} (matches no NGC container)"
