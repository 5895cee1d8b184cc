"""Pack what the GPU machine lacks into ``.gpu-kit/`` (ignored by git), which the device's run carries along.

The GPU machine (DESIGN.md, "The GPU machine") has Python 3.12 with torch, cupy and onnxruntime, but no
tritonserver, no perf_analyzer, no package index, no pip one can count on, and numpy 2 (the stub needs numpy 1).
So the kit holds, every part an xz tarball that tests/gpu/device.sh unpacks with Python's ``tarfile``:

* ``tritonserver-2.51.0.tar.xz``: this cache's server install, with the kit Python's stub only and without the
  wheel's bundled libpython 3.13, laid out as ``<cache>/tritonserver-2.51.0`` (its marker included);
* ``perf-analyzer-2.41.0.tar.xz``: ``<cache>/perf-analyzer-2.41.0`` (the binary, libb64, libcudart 12);
* ``numpy-1.26.4.tar.xz``: numpy 1.26.4 for the kit's Python, unpacked and without its tests, for the server's
  Python;
* ``site.tar.xz``: everything else repogen, its tests and the benchmark import (``REQUIREMENTS`` and what they
  require, resolved by pip for the kit's Python at the versions this checkout's venv runs), installed as a
  ``--target`` directory: the run puts it on ``PYTHONPATH`` and needs no pip. numpy is left out: the machine's
  own numpy 2 serves the test process;
* ``kit.json``: the kit's Python and what it holds, which device.sh checks against the machine's Python.

``python tests/gpu/kit.py [--python 3.12] [--out .gpu-kit]`` makes it (PyPI and the cache's installs; ~50 MiB,
well inside the 64 MiB a device call carries); ``make gpu-rehearsal`` makes one for its own Python. Every tarball
is kept in the cache by what it holds (``_pack``), so a kit of the same files again is copies: seconds, not minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from repogen.server.provision.install import INSTALL_MARKER, default_cache_dir, ensure_server
from repogen.server.provision.perf_analyzer import ensure_perf_analyzer

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".gpu-kit"
PYTHON = "3.12"  # the GPU machine's
RELEASE = "2.51.0"
PLATFORMS = ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_5_x86_64",
             "manylinux1_x86_64", "manylinux_2_24_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64",
             "manylinux_2_35_x86_64")  # fmt: skip
# What the run imports beyond the machine's torch, numpy, cupy and onnxruntime: repogen's dependencies (the SBOM's
# cyclonedx brings sortedcontainers), the tests' (pytest, ml_dtypes for BF16 through tritonclient; grpcio at the
# version tritonclient's stubs were generated for) and array-api-strict (tests/apps/dlpack). tritonclient's http and
# grpc extras without aiohttp, which only tritonclient.http.aio imports.
REQUIREMENTS = (
    "tritonclient", "geventhttpclient", "grpcio", "protobuf", "cloudpickle", "click", "filelock", "PyYAML", "packaging",
    "cyclonedx-python-lib", "pytest", "ml_dtypes", "array-api-strict",
)  # fmt: skip
LEFT_TO_THE_MACHINE = ("numpy", "numpy.libs", "bin")  # top-level names dropped from site/
NUMPY = "numpy==1.26.4"
MAX_MIB = 56  # what a device call carries is 64 MiB, the checkout included
PRESET = 9  # xz's strongest: the kit travels with every device call, inside its 64 MiB


def _pip(python: str, *args: str) -> None:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [sys.executable, "-m", "pip", *args[:1], "--quiet", "--only-binary=:all:", "--python-version", python,
               "--implementation", "cp", *platforms, *args[1:]]  # fmt: skip
    subprocess.run(command, check=True)


def _constraints(path: Path) -> Path:
    """This venv's versions of everything installed, so the kit runs what CI runs (repogen itself left out)."""
    pins = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in importlib.metadata.distributions()
        if d.metadata["Name"] and d.metadata["Name"].lower() not in ("triton-repogen", "torch")
    )
    path.write_text("\n".join(pins) + "\n")
    return path


def _site(python: str, archive: Path) -> list[str]:
    """REQUIREMENTS and what they need, for ``python``, as one ``--target`` tree; the distributions it holds.

    The RECORDs name what the tree holds: pip's lines for the console scripts it wrote outside it (``../../bin/``,
    dropped with ``bin``) go, so the tree is the same from every checkout and its tarball is packed once (``_pack``).
    """
    with tempfile.TemporaryDirectory(prefix="repogen-kit-") as tmp:
        site = Path(tmp) / "site"
        constraints = _constraints(Path(tmp) / "constraints.txt")
        _pip(python, "install", "--no-compile", "--target", str(site), "-c", str(constraints), *REQUIREMENTS)
        for name in LEFT_TO_THE_MACHINE:
            shutil.rmtree(site / name, ignore_errors=True)
        for info in site.glob("numpy-*.dist-info"):
            shutil.rmtree(info)
        for record in site.glob("*.dist-info/RECORD"):  # bin/'s scripts left, whose shebangs name this interpreter
            lines = record.read_text().splitlines(keepends=True)
            record.write_text("".join(line for line in lines if not line.startswith("../")))
        held = sorted(info.name.removesuffix(".dist-info") for info in site.glob("*.dist-info"))
        _pack(site, archive, lambda path: "__pycache__" not in path, top=site, cache_as=f"site-py{python}")
    return held


def _numpy(python: str, archive: Path) -> None:
    """numpy's wheel unpacked as ``numpy/`` and ``numpy.libs/``, its tests left out: a third of the wheel's size."""
    with tempfile.TemporaryDirectory(prefix="repogen-kit-") as tmp:
        _pip(python, "download", "--no-deps", "-d", str(Path(tmp) / "wheel"), NUMPY)
        (wheel,) = (Path(tmp) / "wheel").glob("*.whl")
        site = Path(tmp) / "site"
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(site)
        _pack(site, archive, _not_tests, top=site, cache_as=f"numpy-1.26.4-py{python}")


def _members(source: Path, keep: Callable[[str], bool], top: Path | None) -> list[tuple[Path, str]]:
    """``source``'s paths that ``keep`` keeps, each with its name in the tarball (from its parent, or ``top``)."""
    named = ((path, path.relative_to(top or source.parent).as_posix()) for path in sorted(source.rglob("*")))
    return [(path, name) for path, name in named if keep(name)]


def _digest(members: list[tuple[Path, str]]) -> str:
    """What a tarball of ``members`` holds (names, kinds, modes, bytes, link targets), not when it was made."""
    digest = hashlib.sha256(f"xz-{PRESET}".encode())
    for path, name in members:
        stat = path.lstat()
        digest.update(f"\0{name}\0{stat.st_mode:o}\0".encode())
        if path.is_symlink():
            digest.update(str(path.readlink()).encode())
        elif path.is_file():
            with path.open("rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def _not_tests(path: str) -> bool:
    return "/tests/" not in path and not path.endswith("/tests")


def _pack(
    source: Path, archive: Path, keep: Callable[[str], bool], top: Path | None = None, cache_as: str | None = None
) -> None:
    """``source``'s files that ``keep`` keeps, named from its parent (or from ``top``), into an xz tarball.

    With ``cache_as``, the tarball is kept in the cache under that name and the digest of what it holds, and a
    later kit of the same files copies it: xz -9 is most of a kit's time (~60 s of ``make gpu-rehearsal`` on 2
    cores), and the copy is the very tarball, so the kit's size stays the real one. Older tarballs of that name go.
    """
    members = _members(source, keep, top)
    cached = None
    if cache_as is not None:
        cached = default_cache_dir() / "gpu-kit" / f"{cache_as}-{_digest(members)}.tar.xz"
        if cached.is_file():
            shutil.copyfile(cached, archive)
            return
    with lzma.open(archive, "wb", preset=PRESET) as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        for path, name in members:
            tar.add(path, arcname=name, recursive=False)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        for stale in cached.parent.glob(f"{cache_as}-*.tar.xz"):
            stale.unlink(missing_ok=True)
        partial = cached.with_suffix(".partial")
        shutil.copyfile(archive, partial)
        partial.replace(cached)


def _server_part(python: str) -> Callable[[str], bool]:
    """The ``python`` stub's backend directory only, and not the wheel's libpython 3.13."""

    def keep(path: str) -> bool:
        parts = path.split("/")
        if "libpython3-" in path:
            return False
        if len(parts) > 3 and parts[2] == "tritonserver" and parts[3].startswith(("backends-py", "python_backend_")):
            return parts[3] == f"backends-py{python}" or parts[3:5] == ["python_backend_stubs", python]
        return True

    return keep


def _server(python: str, archive: Path) -> None:
    """The server's part, packed once per install and Python into the cache: xz -9 of 115 MB takes minutes."""
    server = ensure_server(RELEASE)
    marker = (server.root / INSTALL_MARKER).read_bytes()
    key = hashlib.sha256(marker + python.encode()).hexdigest()[:16]
    cached = default_cache_dir() / "gpu-kit" / f"tritonserver-{RELEASE}-py{python}-{key}.tar.xz"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".partial")
        _pack(server.root, partial, _server_part(python))
        partial.replace(cached)
    shutil.copyfile(cached, archive)


def make(out: Path, python: str) -> dict[str, object]:
    """The kit for ``python`` in ``out`` (made anew); its manifest."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    _server(python, out / f"tritonserver-{RELEASE}.tar.xz")
    perf = ensure_perf_analyzer()
    _pack(perf.root, out / f"{perf.root.name}.tar.xz", lambda path: True, cache_as=perf.root.name)
    held = _site(python, out / "site.tar.xz")
    _numpy(python, out / "numpy-1.26.4.tar.xz")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    manifest = {"python": python, "tritonserver": RELEASE, "perf_analyzer": perf.root.name, "site": held,
                "mib": round(size / 2**20, 1)}  # fmt: skip
    (out / "kit.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=PYTHON, help="the GPU machine's Python (X.Y)")
    parser.add_argument("--out", type=Path, default=KIT)
    args = parser.parse_args(argv)
    manifest = make(args.out, args.python)
    print(f"{args.out}: {manifest['mib']} MiB for Python {args.python}: tritonserver {RELEASE}, "
          f"{manifest['perf_analyzer']}, numpy 1.26.4 and {len(manifest['site'])} distributions")  # type: ignore[arg-type]  # fmt: skip
    if float(manifest["mib"]) > MAX_MIB:  # type: ignore[arg-type]
        print(f"the kit is over {MAX_MIB} MiB: a device call carries 64 MiB with the checkout", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
