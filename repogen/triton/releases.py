"""Every stock tritonserver release repogen knows: one row per monthly NGC container, 23.10 to 25.10.

Each row says which ``tritonserver`` the NGC ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3`` image holds,
and the Python and numpy its backend stub serves models with. Three releases also ship in PyPI's
``nvidia-pytriton`` wheel (an unmodified ``tritonserver``, the Python backend and backend stubs):
that is how repogen runs a real server without Docker. The sha256 of each wheel is pinned here and
checked at install time, so a tampered or re-uploaded wheel is refused instead of silently served.

Sources: the NGC release notes (``tritonserver`` 2.N.0 ships as NGC ``yy.mm``, one number per month
from 2.39.0 = 23.10), and the design notes checked on the stock containers: 23.10-24.11 ship Python
3.10 (24.11 is the last release on Ubuntu 22.04), 24.12 and later ship Python 3.12 (Ubuntu 24.04),
all ship numpy 1.26.4.

:func:`get_release` accepts every spelling people paste (``24.10``, ``r24.10``, ``24.10-py3``,
``2.51.0``, ``2.51``, ``v2.51.0``, ``nvcr.io/nvidia/tritonserver:24.10-py3``); it is the one parser
of a release name, behind every command's ``--triton-version``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnknownReleaseError

__all__ = [
    "DEFAULT_RELEASE",
    "EMBEDDED",
    "IMAGE_REPOSITORY",
    "RELEASES",
    "Release",
    "Wheel",
    "get_release",
    "no_wheel",
    "pairing_label",
    "version_tuple",
]

IMAGE_REPOSITORY = "nvcr.io/nvidia/tritonserver"
_NUMPY = "1.26.4"


def version_tuple(version: str) -> tuple[int, ...]:
    """``"2.41.0"`` → ``(2, 41, 0)``: compare versions numerically, never as strings ("2.9" < "2.41")."""
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class Wheel:
    """The PyPI ``nvidia-pytriton`` wheel that carries a release's unmodified ``tritonserver``."""

    pytriton: str
    """``nvidia-pytriton`` version."""
    filename: str
    sha256: str
    stub_pythons: tuple[str, ...]
    """Python ``major.minor`` versions with a backend stub inside the wheel."""
    platform: str = "x86_64"
    """Machine architecture of :attr:`filename`."""

    @property
    def requirement(self) -> str:
        return f"nvidia-pytriton=={self.pytriton}"


@dataclass(frozen=True)
class Release:
    """One NGC tritonserver container: what a model built for it must match, and how to run it here."""

    ngc: str
    """NGC release ``yy.mm`` (``nvcr.io/nvidia/tritonserver:<ngc>-py3``)."""
    tritonserver: str
    """The ``tritonserver`` version inside, e.g. ``2.51.0``."""
    python: str
    """Python ``major.minor`` of the container's backend stub (what production serves models with)."""
    numpy: str = _NUMPY
    """numpy installed in the container."""
    wheel: Wheel | None = None
    """The PyPI wheel shipping this server, for the releases ``repogen serve`` and the tests can embed."""

    @property
    def glibc(self) -> str:
        """The C library of the container's Ubuntu (22.04: 2.35, 24.04: 2.39): the newest manylinux wheel it loads."""
        return _GLIBC_312 if self.python == "3.12" else _GLIBC_310

    @property
    def tag(self) -> str:
        """The image tag, ``24.10-py3`` (also KServe's ``runtimeVersion``)."""
        return f"{self.ngc}-py3"

    @property
    def image(self) -> str:
        return f"{IMAGE_REPOSITORY}:{self.tag}"

    @property
    def label(self) -> str:
        """``tritonserver 2.51.0 (NGC 24.10)``."""
        return f"tritonserver {self.tritonserver} (NGC {self.ngc})"

    @property
    def version(self) -> tuple[int, ...]:
        """``(2, 51, 0)``: releases compare by this."""
        return version_tuple(self.tritonserver)

    @property
    def stub_pythons(self) -> tuple[str, ...]:
        """Pythons with a backend stub in this release's wheel; none without a wheel."""
        return self.wheel.stub_pythons if self.wheel else ()

    def record(self) -> dict[str, str]:
        """What a build writes into ``model.json`` and the manifest under ``"target"``."""
        return {"image": self.image, "ngc": self.ngc, "numpy": self.numpy, "python": self.python,
                "tritonserver": self.tritonserver}  # fmt: skip


_FIRST_MINOR = 39  # tritonserver 2.39.0 is NGC 23.10, the oldest release repogen supports
_FIRST_MONTH = (2023, 10)
_LAST_MONTH = (2025, 10)
_PYTHON_312_FROM = (2024, 12)  # and Ubuntu 24.04 with it
_GLIBC_310, _GLIBC_312 = "2.35", "2.39"  # Ubuntu 22.04 / 24.04

_PY_38_311 = ("3.8", "3.9", "3.10", "3.11")
_WHEELS = {
    "23.10": Wheel(
        pytriton="0.4.2",
        filename="nvidia_pytriton-0.4.2-py3-none-manylinux_2_35_x86_64.whl",
        sha256="8f79e8bda28961a49d5c64474c17664e10b1bb08018b7ee7bcbd81bcff86e266",
        stub_pythons=_PY_38_311,
    ),
    "23.12": Wheel(
        pytriton="0.5.0",
        filename="nvidia_pytriton-0.5.0-py3-none-manylinux_2_35_x86_64.whl",
        sha256="f46a3c03fb0893948f57c1d5470998a6f403f2c8036d7af944c817a8fba31a46",
        stub_pythons=_PY_38_311,
    ),
    "24.10": Wheel(
        pytriton="0.7.0",
        filename="nvidia_pytriton-0.7.0-py3-none-manylinux_2_35_x86_64.whl",
        sha256="21f063ff93bb426d0c06b7a55e7eb9efcfe62c0dddd9a908e9877e18710128df",
        stub_pythons=(*_PY_38_311, "3.12", "3.13"),
    ),
}


def _table() -> tuple[Release, ...]:
    rows: list[Release] = []
    year, month = _FIRST_MONTH
    while (year, month) <= _LAST_MONTH:
        ngc = f"{year % 100:02d}.{month:02d}"
        python = "3.12" if (year, month) >= _PYTHON_312_FROM else "3.10"
        rows.append(Release(ngc, f"2.{_FIRST_MINOR + len(rows)}.0", python, _NUMPY, _WHEELS.get(ngc)))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return tuple(rows)


RELEASES: tuple[Release, ...] = _table()
"""Every monthly NGC release from 23.10 to 25.10, oldest first."""

EMBEDDED: tuple[Release, ...] = tuple(r for r in RELEASES if r.wheel is not None)
"""The releases with a PyPI wheel: 2.39.0, 2.41.0 and 2.51.0."""


DEFAULT_NGC, DEFAULT_TRITONSERVER = "24.10", "2.51.0"


def _normalize(key: str) -> str:
    """The one normalizer: the image name, ``r``/``v`` prefixes and the ``-py3`` suffix are dropped."""
    key = key.strip().lower().rsplit(":", 1)[-1].removesuffix("-py3")
    return key[1:] if key[:1] in ("r", "v") else key


_BY_NAME: dict[str, Release] = {
    name: release
    for release in RELEASES
    for name in (release.ngc, release.tritonserver, release.tritonserver.rsplit(".", 1)[0])
}


def get_release(key: str | Release) -> Release:
    """The release an NGC tag (``24.10``) or tritonserver version (``2.51.0``/``2.51``) names, in any spelling."""
    if isinstance(key, Release):
        return key
    release = _BY_NAME.get(_normalize(key))
    if release is None:
        raise UnknownReleaseError(
            f"unknown Triton release {key!r}; expected an NGC release from {RELEASES[0].ngc} to {RELEASES[-1].ngc} "
            f"(e.g. {DEFAULT_NGC}) or its tritonserver version (e.g. {DEFAULT_TRITONSERVER})"
        )
    return release


DEFAULT_RELEASE: Release = get_release(DEFAULT_NGC)
"""NGC 24.10 (tritonserver 2.51.0): the schema repogen emits, and the server it embeds by default."""


def no_wheel(release: Release) -> str:
    """Why ``release`` cannot be installed here, naming the releases that can."""
    return (
        f"{release.label} ships in no PyPI wheel, so repogen cannot install it; the releases it can embed are "
        f"{', '.join(r.label for r in EMBEDDED)}"
    )


def pairing_label(release: Release, python: str) -> str:
    """``"tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"``: a server release and the Python its stub runs.

    Says which NGC container runs that pairing, or that none does, so a log shows what was tested. A
    Python that only a later container runs (3.12: NGC 24.12 and later) makes the pairing stand in for it.
    """
    head = f"tritonserver {release.tritonserver} + Python {python}"
    if python == release.python:
        return f"{head} (NGC {release.ngc})"
    later = next((r for r in RELEASES if r.python == python and r.version > release.version), None)
    if later is not None:
        return f"{head} (stands in for NGC {later.ngc}+)"
    return f"{head} (matches no NGC container)"
