"""Every stock tritonserver release repogen knows: one row per monthly NGC container, 23.10 to 26.11.

Each row says which ``tritonserver`` the NGC ``nvcr.io/nvidia/tritonserver:<yy.mm>-py3`` image holds,
the Ubuntu it is built on (which fixes the Python its backend stub serves models with and the glibc
shipped wheels must be tagged for), the numpy it installs and its CUDA major. Three releases also
ship in PyPI's ``nvidia-pytriton`` wheel (an unmodified ``tritonserver``, the Python backend and
backend stubs): that is how repogen runs a real server without Docker. The sha256 of each wheel is
pinned here and checked at install time, so a tampered or re-uploaded wheel is refused.

Where each fact comes from (triton-inference-server/server, read at every tag v2.39.0 ... v2.71.0):

* NGC ``yy.mm`` ↔ tritonserver: ``build.py``'s version map at the tag (``TRITON_VERSION_MAP`` up to
  v2.52.0, ``DEFAULT_TRITON_VERSION_MAP["triton_container_version"]`` from v2.53.0). One minor per
  month from 2.39.0 = 23.10, except that 25.07 is the patch release **2.59.1** (25.06 = 2.59.0), so
  from 25.08 = 2.60.0 the minor is one behind the month count. 26.08-26.11 (2.72.0-2.75.0) are past
  the newest tag read here (v2.71.0 = 26.07); they follow the numbering, and 26.11 = 2.75.0 was
  published 2026-11-17.
* Ubuntu: ``build.py``'s base image, ``ubuntu:22.04`` through v2.51.0 (24.10) and ``ubuntu:24.04`` from
  v2.52.0 (24.11; python_backend r24.11 is "Build Updates for Ubuntu24.04"). Ubuntu 22.04 ships Python
  3.10 and glibc 2.35, 24.04 Python 3.12 and glibc 2.39 (``ARG PYVER=3.12`` in build.py from v2.55.0;
  docs/introduction/compatibility.md lists 3.12.3 for 24.12-26.07). That compatibility table lists
  Python 3.10.12 for *24.11-trtllm-python-py3*: the TensorRT-LLM image has another base; the plain
  ``-py3`` image follows build.py.
* numpy: ``build.py`` installs ``numpy`` unpinned up to v2.46.0 (24.05), i.e. the newest numpy when the
  image was built, 1.26.x for all of them (numpy 2.0.0 came out 2024-06-16; the exact patch of
  23.10-24.01 is stated nowhere and assumed ABI-equal to 1.26.4), and pins ``numpy<2`` from v2.47.0
  (24.06) through v2.71.0 at least. repogen resolves shipped packages against 1.26.4.
* CUDA major: ``libcudart.so.12`` in build.py through v2.59.1 (25.07), ``libcudart.so.13`` from v2.60.0
  (25.08); the release notes of 26.02-26.06 say CUDA 13.1-13.3.
* 26.08-26.11 (past v2.71.0): Ubuntu 24.04, numpy<2 and CUDA 13 assumed, as at v2.71.0.

:func:`get_release` accepts every spelling people paste (``24.10``, ``r24.10``, ``24.10-py3``,
``2.51.0``, ``2.51``, ``v2.51.0``, ``nvcr.io/nvidia/tritonserver:24.10-py3``); it is the one parser
of a release name, behind every command's ``--triton-release``. A release newer than the table
(next month's) is accepted with the newest row's facts and one :class:`ReleaseAssumedWarning`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace

from ..errors import ReleaseAssumedWarning, UnknownReleaseError

__all__ = [
    "DEFAULT_RELEASE",
    "EMBEDDED",
    "IMAGE_REPOSITORY",
    "NEWEST",
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
class Ubuntu:
    """What an NGC image's Ubuntu gives a model: the Python its stub embeds and the C library."""

    version: str
    python: str
    glibc: str


_UBUNTU = {u.version: u for u in (Ubuntu("22.04", "3.10", "2.35"), Ubuntu("24.04", "3.12", "2.39"))}


@dataclass(frozen=True)
class Release:
    """One NGC tritonserver container: what a model built for it must match, and how to run it here."""

    ngc: str
    """NGC release ``yy.mm`` (``nvcr.io/nvidia/tritonserver:<ngc>-py3``)."""
    tritonserver: str
    """The ``tritonserver`` version inside, e.g. ``2.51.0``."""
    python: str
    """Python ``major.minor`` of the container's backend stub (what production serves models with): its Ubuntu's."""
    ubuntu: str
    """The image's Ubuntu (``22.04``, ``24.04``): its Python and glibc."""
    cuda: int
    """CUDA major of the image's libraries (``libcudart.so.<cuda>``)."""
    numpy_pin: str = "<2"
    """What the image's build asks pip for (``<2``; empty: unpinned, the newest 1.26.x of the day)."""
    numpy: str = _NUMPY
    """The numpy shipped packages are resolved against (and the server venvs here hold)."""
    wheel: Wheel | None = None
    """The PyPI wheel shipping this server, for the releases ``repogen serve`` and the tests can embed."""
    assumed: bool = False
    """Newer than the table: every fact but the name is the newest row's (see :func:`get_release`)."""

    @property
    def glibc(self) -> str:
        """The C library of the container's Ubuntu: the newest manylinux tag a shipped wheel may carry."""
        return _UBUNTU[self.ubuntu].glibc

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

    def record(self) -> dict[str, str | int | bool]:
        """What a build writes into ``model.json`` and the manifest under ``"target"``: what it assumed of the image."""
        return {"cuda": self.cuda, "glibc": self.glibc, "image": self.image, "ngc": self.ngc, "numpy": self.numpy,
                "python": self.python, "tritonserver": self.tritonserver,
                **({"assumed": True} if self.assumed else {})}  # fmt: skip


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

# The table, oldest first: NGC, tritonserver, Ubuntu, CUDA major, numpy pin ("" = unpinned). Sources above.
_ROWS = (
    ("23.10", "2.39.0", "22.04", 12, ""), ("23.11", "2.40.0", "22.04", 12, ""), ("23.12", "2.41.0", "22.04", 12, ""),
    ("24.01", "2.42.0", "22.04", 12, ""), ("24.02", "2.43.0", "22.04", 12, ""), ("24.03", "2.44.0", "22.04", 12, ""),
    ("24.04", "2.45.0", "22.04", 12, ""), ("24.05", "2.46.0", "22.04", 12, ""), ("24.06", "2.47.0", "22.04", 12, "<2"),
    ("24.07", "2.48.0", "22.04", 12, "<2"), ("24.08", "2.49.0", "22.04", 12, "<2"),
    ("24.09", "2.50.0", "22.04", 12, "<2"), ("24.10", "2.51.0", "22.04", 12, "<2"),
    ("24.11", "2.52.0", "24.04", 12, "<2"), ("24.12", "2.53.0", "24.04", 12, "<2"),
    ("25.01", "2.54.0", "24.04", 12, "<2"), ("25.02", "2.55.0", "24.04", 12, "<2"),
    ("25.03", "2.56.0", "24.04", 12, "<2"), ("25.04", "2.57.0", "24.04", 12, "<2"),
    ("25.05", "2.58.0", "24.04", 12, "<2"), ("25.06", "2.59.0", "24.04", 12, "<2"),
    ("25.07", "2.59.1", "24.04", 12, "<2"), ("25.08", "2.60.0", "24.04", 13, "<2"),
    ("25.09", "2.61.0", "24.04", 13, "<2"), ("25.10", "2.62.0", "24.04", 13, "<2"),
    ("25.11", "2.63.0", "24.04", 13, "<2"), ("25.12", "2.64.0", "24.04", 13, "<2"),
    ("26.01", "2.65.0", "24.04", 13, "<2"), ("26.02", "2.66.0", "24.04", 13, "<2"),
    ("26.03", "2.67.0", "24.04", 13, "<2"), ("26.04", "2.68.0", "24.04", 13, "<2"),
    ("26.05", "2.69.0", "24.04", 13, "<2"), ("26.06", "2.70.0", "24.04", 13, "<2"),
    ("26.07", "2.71.0", "24.04", 13, "<2"), ("26.08", "2.72.0", "24.04", 13, "<2"),
    ("26.09", "2.73.0", "24.04", 13, "<2"), ("26.10", "2.74.0", "24.04", 13, "<2"),
    ("26.11", "2.75.0", "24.04", 13, "<2"),
)  # fmt: skip

RELEASES: tuple[Release, ...] = tuple(
    Release(ngc, server, _UBUNTU[ubuntu].python, ubuntu, cuda, pin, _NUMPY, _WHEELS.get(ngc))
    for ngc, server, ubuntu, cuda, pin in _ROWS
)
"""Every monthly NGC release from 23.10 to 26.11, oldest first."""

EMBEDDED: tuple[Release, ...] = tuple(r for r in RELEASES if r.wheel is not None)
"""The releases with a PyPI wheel: 2.39.0, 2.41.0 and 2.51.0."""

NEWEST: Release = RELEASES[-1]
"""The newest release in the table: what ``deploy`` writes by default."""

DEFAULT_NGC = "24.10"


def _normalize(key: str) -> str:
    """The one normalizer: the image name, ``r``/``v`` prefixes and the ``-py3`` suffix are dropped."""
    key = key.strip().lower().rsplit(":", 1)[-1].removesuffix("-py3")
    return key[1:] if key[:1] in ("r", "v") else key


_BY_NAME: dict[str, Release] = {}
for _release in RELEASES:  # "2.59" is 2.59.0 (25.06), not the patch release 2.59.1 (25.07) after it
    for _name in (_release.ngc, _release.tritonserver, _release.tritonserver.rsplit(".", 1)[0]):
        _BY_NAME.setdefault(_name, _release)
_NGC = re.compile(r"(\d\d)\.(\d\d)")
_SERVER = re.compile(r"2\.(\d+)(?:\.(\d+))?")


def _months(ngc: str) -> int:
    year, month = (int(part) for part in ngc.split("."))
    return year * 12 + month - 1


def _future(name: str) -> Release | None:
    """A release newer than the table, named by NGC tag or tritonserver version; None if it cannot be one.

    After the newest row one tritonserver minor per month is assumed (as from 25.08 on), so ``27.01``
    is tritonserver 2.77.0 and ``2.76.0`` is NGC 26.12.
    """
    newest = _months(NEWEST.ngc)
    minor = version_tuple(NEWEST.tritonserver)[1]
    if match := _NGC.fullmatch(name):
        month = int(match[2])
        if not 1 <= month <= 12 or _months(name) <= newest:
            return None
        ngc, server = name, f"2.{minor + _months(name) - newest}.0"
    elif match := _SERVER.fullmatch(name):
        ahead = int(match[1]) - minor
        if ahead <= 0:
            return None
        total = newest + ahead
        ngc, server = f"{total // 12:02d}.{total % 12 + 1:02d}", f"2.{match[1]}.{match[2] or 0}"
    else:
        return None
    return replace(NEWEST, ngc=ngc, tritonserver=server, wheel=None, assumed=True)


def _why_not(name: str) -> str:
    """Why a release-shaped name is refused (empty when it is not shaped like one)."""
    first = RELEASES[0]
    if _NGC.fullmatch(name):
        if not 1 <= int(name[3:]) <= 12:
            return " (no such month)"
        return f" (older than NGC {first.ngc}, the oldest release repogen builds for)"
    if match := _SERVER.fullmatch(name):
        if int(match[1]) < version_tuple(first.tritonserver)[1]:
            return f" (older than tritonserver {first.tritonserver}, the oldest release repogen builds for)"
        return " (no NGC release shipped that tritonserver version)"
    return ""


def assumption(release: Release) -> str:
    """What repogen assumes about a release newer than its table, and how the user can confirm it."""
    return (
        f"{release.label} is newer than repogen's release table (newest: {NEWEST.label}); assuming its container "
        f"is like {NEWEST.ngc}'s: Ubuntu {release.ubuntu}, Python {release.python}, glibc {release.glibc}, numpy "
        f"{release.numpy} (numpy{release.numpy_pin or ' unpinned'}), CUDA {release.cuda}. Confirm with "
        f"`docker run --rm {release.image} python3 -c 'import sys, platform, numpy; "
        f"print(sys.version, platform.libc_ver(), numpy.__version__)'`, or upgrade repogen"
    )


def get_release(key: str | Release) -> Release:
    """The release an NGC tag (``24.10``) or tritonserver version (``2.51.0``/``2.51``) names, in any spelling.

    A name newer than the table (``27.01``, ``2.76.0``) gives the newest row's facts under that name and
    warns once (:class:`~repogen.errors.ReleaseAssumedWarning`); only what cannot be a release supported
    here (older than 23.10, a month 13, not a version) is refused.
    """
    if isinstance(key, Release):
        return key
    name = _normalize(key)
    release = _BY_NAME.get(name) or _future(name)
    if release is None:
        raise UnknownReleaseError(
            f"unknown Triton release {key!r}{_why_not(name)}; expected an NGC release from {RELEASES[0].ngc} on "
            f"(the table reaches {NEWEST.ngc}; a newer one is assumed to be like it), e.g. {NEWEST.ngc}, or its "
            f"tritonserver version, e.g. {NEWEST.tritonserver}"
        )
    if release.assumed:
        warnings.warn(assumption(release), ReleaseAssumedWarning, stacklevel=2)
    return release


DEFAULT_RELEASE: Release = get_release(DEFAULT_NGC)
"""NGC 24.10 (tritonserver 2.51.0): the newest release a PyPI wheel ships, the server repogen embeds by default."""


def no_wheel(release: Release) -> str:
    """Why ``release`` cannot be installed here, naming the releases that can."""
    return (
        f"{release.label} ships in no PyPI wheel, so repogen cannot install it; the releases it can embed are "
        f"{', '.join(r.label for r in EMBEDDED)}"
    )


def first_with_python(python: str) -> Release | None:
    """The oldest release whose container serves models with ``python``."""
    return next((r for r in RELEASES if r.python == python), None)


def newest_with_cuda(major: int, python: str | None = None) -> Release | None:
    """The newest release whose container has CUDA ``major`` (and serves models with ``python``, if given)."""
    return next((r for r in reversed(RELEASES) if r.cuda == major and python in (None, r.python)), None)


def pairing_label(release: Release, python: str) -> str:
    """``"tritonserver 2.51.0 + Python 3.10 (NGC 24.10)"``: a server release and the Python its stub runs.

    Says which NGC container runs that pairing, or that none does, so a log shows what was tested. A
    Python that only a later container runs (3.12: NGC 24.11 and later) makes the pairing stand in for it.
    """
    head = f"tritonserver {release.tritonserver} + Python {python}"
    if python == release.python:
        return f"{head} (NGC {release.ngc})"
    later = first_with_python(python)
    if later is not None and later.version > release.version:
        return f"{head} (stands in for NGC {later.ngc}+)"
    return f"{head} (matches no NGC container)"
