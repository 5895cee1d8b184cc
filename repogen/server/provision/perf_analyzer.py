"""perf_analyzer, the load generator Triton users measure with, installed from PyPI: no GPU, no root.

tritonclient 2.41.0's manylinux wheel ships ``bin/perf_analyzer``. The binary links
``libb64.so.0d`` (Debian's ``libb64-0d``) and ``libcudart.so.12`` (PyPI's
``nvidia-cuda-runtime-cu12``); it runs on a CPU-only machine once both can be loaded. Everything
lands in ``<cache>/perf-analyzer-2.41.0/`` (``bin/perf_analyzer`` and ``lib/``), built beside and
renamed into place under a file lock, like the server install. libb64 comes from the system when
it is installed, else from ``apt-get download`` (a plain download, no root), else the error says
which package to install.

It reports the server-side cost per request (queue, compute input/infer/output) beside the
client's throughput and latency, which a Python load generator on the same cores cannot.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from repogen.server.provision.install import (
    ServerInstallError,
    default_cache_dir,
    download_wheel,
    locked,
    publish,
    run_step,
)

__all__ = ["PerfAnalyzer", "ensure_perf_analyzer"]

MARKER = ".repogen-perf-analyzer.json"
VERSION = "2.41.0"


@dataclasses.dataclass(frozen=True)
class _Pinned:
    requirement: str
    filename: str
    sha256: str


CLIENT_WHEEL = _Pinned(
    f"tritonclient=={VERSION}",
    f"tritonclient-{VERSION}-py3-none-manylinux1_x86_64.whl",
    "cf4ed5df836fa99937678a9fd852f86ba05c7b83656dd0a540e20afdb9ab4629",
)
CUDA_RUNTIME_WHEEL = _Pinned(
    "nvidia-cuda-runtime-cu12==12.4.127",
    "nvidia_cuda_runtime_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl",
    "64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5",
)
LIBB64 = "libb64.so.0d"
LIBB64_PACKAGE = "libb64-0d"
_SYSTEM_LIBS = (Path("/usr/lib/x86_64-linux-gnu"), Path("/usr/lib64"), Path("/usr/lib"))


@dataclasses.dataclass(frozen=True)
class PerfAnalyzer:
    """An installed perf_analyzer and the libraries it loads."""

    root: Path

    @property
    def binary(self) -> Path:
        return self.root / "bin" / "perf_analyzer"

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(self.lib_dir), env.get("LD_LIBRARY_PATH", "")]))
        return env


def ensure_perf_analyzer(cache_dir: str | Path | None = None) -> PerfAnalyzer:
    """Install perf_analyzer into ``<cache>/perf-analyzer-2.41.0`` once; then reuse it."""
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    final = cache / f"perf-analyzer-{VERSION}"
    if (final / MARKER).is_file():
        return PerfAnalyzer(final)
    with locked(cache, final.name):
        if (final / MARKER).is_file():
            return PerfAnalyzer(final)
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{final.name}.tmp-"))
        try:
            (tmp / "bin").mkdir()
            (tmp / "lib").mkdir()
            client = download_wheel(CLIENT_WHEEL, "perf_analyzer", cache / "wheels")
            _extract(client, f"tritonclient-{VERSION}.data/data/bin/perf_analyzer", tmp / "bin" / "perf_analyzer")
            (tmp / "bin" / "perf_analyzer").chmod(0o755)
            cuda = download_wheel(CUDA_RUNTIME_WHEEL, "libcudart.so.12 for perf_analyzer", cache / "wheels")
            _extract(cuda, "nvidia/cuda_runtime/lib/libcudart.so.12", tmp / "lib" / "libcudart.so.12")
            _provide_libb64(tmp / "lib")
            (tmp / MARKER).write_text(json.dumps({"tritonclient": VERSION}, indent=2) + "\n")
            _check_runs(PerfAnalyzer(tmp))
            publish(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return PerfAnalyzer(final)


def _extract(wheel: Path, member: str, destination: Path) -> None:
    with zipfile.ZipFile(wheel) as archive, archive.open(member) as source, destination.open("wb") as target:
        shutil.copyfileobj(source, target)


def _provide_libb64(lib_dir: Path) -> None:
    """The system's libb64 when installed, else the Debian package's file, fetched without installing it."""
    for directory in _SYSTEM_LIBS:
        if (directory / LIBB64).is_file():
            shutil.copy2(directory / LIBB64, lib_dir / LIBB64)
            return
    how = (
        f"perf_analyzer needs {LIBB64} from Debian's {LIBB64_PACKAGE}: install it (`sudo apt-get install "
        f"{LIBB64_PACKAGE}`) and run again"
    )
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise ServerInstallError(f"{how}; this machine has no apt-get/dpkg-deb to fetch it")
    with tempfile.TemporaryDirectory() as tmp:
        _download_deb(Path(tmp), how)
        debs = sorted(Path(tmp).glob(f"{LIBB64_PACKAGE}_*.deb"))
        run_step(["dpkg-deb", "-x", str(debs[0]), str(Path(tmp) / "x")], f"unpacking {debs[0].name}", how)
        found = sorted((Path(tmp) / "x").rglob(LIBB64))
        if not found:
            raise ServerInstallError(f"{debs[0].name} holds no {LIBB64}; {how}")
        shutil.copy2(found[0], lib_dir / LIBB64)


def _download_deb(directory: Path, how: str) -> None:
    proc = subprocess.run(["apt-get", "download", LIBB64_PACKAGE], cwd=directory, capture_output=True, text=True)
    if proc.returncode != 0 or not list(directory.glob(f"{LIBB64_PACKAGE}_*.deb")):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise ServerInstallError(f"`apt-get download {LIBB64_PACKAGE}` failed: {' / '.join(tail)}; {how}")


def _check_runs(perf: PerfAnalyzer) -> None:
    proc = subprocess.run([str(perf.binary), "--version"], env=perf.environment(), capture_output=True, text=True)
    if proc.returncode != 0 or VERSION not in proc.stdout + proc.stderr:
        raise ServerInstallError(
            f"perf_analyzer does not start ({perf.binary} --version exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[-500:]}"
        )
