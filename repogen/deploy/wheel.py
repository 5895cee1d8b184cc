"""The running repogen as a wheel, for a Docker build stage to install from its build context.

A Dockerfile that runs ``pip install repogen`` installs whatever an index calls ``repogen`` (on PyPI, an
unrelated project). The build stage installs this wheel instead: exactly the code that wrote the
Dockerfile, with its declared dependencies, whether repogen runs from a checkout (editable) or from an
installed wheel. It is packed from the imported package, deterministically (sorted, fixed timestamps),
so rewriting deployment files changes nothing when repogen did not change.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import io
import zipfile
from pathlib import Path

from ..emit.templates import templates_dir
from ..errors import DeployError
from ..version import __version__

__all__ = ["DISTRIBUTION", "wheel_bytes", "wheel_name"]

DISTRIBUTION = "triton-repogen"
_EPOCH = (1980, 1, 1, 0, 0, 0)


def wheel_name() -> str:
    return f"{DISTRIBUTION.replace('-', '_')}-{__version__}-py3-none-any.whl"


def _package_files() -> dict[str, bytes]:
    """Every file of the ``repogen`` package (templates included, wherever an editable install maps them)."""
    root = Path(__file__).resolve().parents[1]
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            found[f"repogen/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    templates = templates_dir()
    for path in sorted(templates.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            found[f"repogen/model_repository_templates/{path.relative_to(templates).as_posix()}"] = path.read_bytes()
    return found


def _metadata() -> tuple[str, str]:
    """The core metadata and entry points of the installed distribution (its ``METADATA``, or ``PKG-INFO``).

    Not simply ``distribution(DISTRIBUTION)``: that is the first match on ``sys.path``, and ``python -m
    repogen`` in a checkout puts the checkout first, where setuptools leaves ``triton_repogen.egg-info``
    (a ``PKG-INFO``, no ``METADATA``); a wheel made from it would install without its dependencies.
    """
    found = []
    for dist in importlib.metadata.distributions(name=DISTRIBUTION):
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
        if text and dist.version == __version__:
            found.append((dist.read_text("METADATA") is None, text, dist.read_text("entry_points.txt") or ""))
    if not found:
        raise DeployError(
            f"repogen {__version__} runs without its distribution metadata ({DISTRIBUTION} {__version__} is not "
            "installed), so no wheel of it can be made for the image. Install it (`make install`, or pip install "
            "-e . in a checkout), or leave --app out to copy the repository built here instead."
        )
    _, metadata, entry_points = min(found, key=lambda item: item[0])  # a dist-info before an egg-info
    return metadata, entry_points


def _dist_info() -> dict[str, bytes]:
    metadata, entry_points = _metadata()
    info = f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info"
    wheel = "Wheel-Version: 1.0\nGenerator: repogen deploy\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {
        f"{info}/METADATA": metadata.encode(),
        f"{info}/entry_points.txt": entry_points.encode(),
        f"{info}/WHEEL": wheel.encode(),
    }


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_bytes() -> bytes:
    """The wheel of the running repogen (``wheel_name()``), byte-identical for the same code."""
    files = {**_package_files(), **_dist_info()}
    record_name = f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info/RECORD"
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in sorted(files.items()))
    files[record_name] = (record + f"{record_name},,\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(files.items()):
            entry = zipfile.ZipInfo(name, _EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return buffer.getvalue()
