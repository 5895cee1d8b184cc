"""Pack what the GPU machine lacks into ``.gpu-kit/`` (ignored by git), which the device's run carries along.

The GPU machine (DESIGN.md, "The GPU machine") has Python 3.12 with torch, cupy, onnx and onnxruntime, but no
tritonserver, no perf_analyzer, no package index and numpy 2 (the stub needs numpy 1). So the kit holds:

* ``tritonserver-2.51.0.tar.xz``: this cache's server install, with the Python 3.12 stub only and without the
  wheel's bundled libpython 3.13, laid out as ``<cache>/tritonserver-2.51.0`` (its marker included);
* ``perf-analyzer-2.41.0.tar.xz``: ``<cache>/perf-analyzer-2.41.0`` (the binary, libb64, libcudart 12);
* ``numpy-1.26.4.tar.xz``: numpy 1.26.4 for Python 3.12, unpacked and without its tests, for the server's Python;
* ``wheels/``: what repogen and its tests import that the machine's image lacks (tritonclient and its HTTP
  stack, cyclonedx's, protobuf at this checkout's version, cloudpickle 3.1.2); its grpcio serves as it is.

``python tests/gpu/kit.py`` makes it (PyPI and the cache's installs; ~60 MB); tests/gpu/device.sh unpacks it.
"""

from __future__ import annotations

import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from repogen.server.provision.install import default_cache_dir, ensure_server
from repogen.server.provision.perf_analyzer import ensure_perf_analyzer

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".gpu-kit"
PYTHON = "3.12"
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_5_x86_64",
             "manylinux1_x86_64", "manylinux_2_24_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_35_x86_64")  # fmt: skip
WHEELS = (
    "tritonclient==2.73.0", "geventhttpclient==2.6.1", "gevent==26.9.0", "greenlet==3.3.2", "zope.event==6.2",
    "zope.interface==8.7", "brotli==1.2.1", "python-rapidjson==1.25", "cloudpickle==3.1.2", "protobuf==6.33.6",
    "cyclonedx-python-lib==11.12.0", "py-serializable==2.2.0", "license-expression==30.4.4",
    "boolean.py==5.0", "packageurl-python==0.17.6", "defusedxml==0.7.1", "array-api-strict==2.6.1",
)  # fmt: skip
NUMPY = "numpy==1.26.4"


def _download(requirements: tuple[str, ...], into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--python-version", PYTHON, "--implementation", "cp", *platforms, "-d", str(into),
               *requirements]  # fmt: skip
    subprocess.run(command, check=True)


def _numpy(archive: Path) -> None:
    """numpy's wheel unpacked as ``numpy/`` and ``numpy.libs/``, its tests left out: a third of the wheel's size."""
    with tempfile.TemporaryDirectory(prefix="repogen-kit-") as tmp:
        _download((NUMPY,), Path(tmp) / "wheel")
        (wheel,) = (Path(tmp) / "wheel").glob("*.whl")
        site = Path(tmp) / "site"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
        _pack(site, archive, lambda path: "/tests/" not in path and not path.endswith("/tests"), top=site)


def _pack(source: Path, archive: Path, keep, top: Path | None = None) -> None:  # type: ignore[no-untyped-def]
    """``source``'s files that ``keep`` keeps, named from its parent (or from ``top``), into an xz tarball."""
    with lzma.open(archive, "wb", preset=9) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for path in sorted(source.rglob("*")):
            relative = path.relative_to(top or source.parent)
            if keep(relative.as_posix()):
                tar.add(path, arcname=relative.as_posix(), recursive=False)


def _server_part(path: str) -> bool:
    """The 3.12 stub's backend directory only, and not the wheel's libpython 3.13."""
    parts = path.split("/")
    if "libpython3-" in path:
        return False
    if len(parts) > 3 and parts[2] == "tritonserver" and parts[3].startswith(("backends-py", "python_backend_stubs")):
        return parts[3] == f"backends-py{PYTHON}" or parts[3:5] == ["python_backend_stubs", PYTHON]
    return True


def main() -> int:
    shutil.rmtree(KIT, ignore_errors=True)
    KIT.mkdir()
    server = ensure_server("2.51.0")
    _pack(server.root, KIT / "tritonserver-2.51.0.tar.xz", _server_part)
    perf = ensure_perf_analyzer()
    _pack(perf.root, KIT / "perf-analyzer-2.41.0.tar.xz", lambda path: True)
    _download(WHEELS, KIT / "wheels")
    _numpy(KIT / "numpy-1.26.4.tar.xz")
    total = sum(p.stat().st_size for p in KIT.rglob("*") if p.is_file())
    print(f"{KIT}: {total / 2**20:.1f} MiB for {default_cache_dir()}'s installs and {len(WHEELS) + 1} wheels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
