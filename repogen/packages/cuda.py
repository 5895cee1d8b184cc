"""Which CUDA major a shipped package tree needs, read from its native libraries.

NGC images carry CUDA 12 libraries up to 25.07 and CUDA 13 from 25.08 (``Release.cuda``). A wheel
built against one major links that major's sonames (``libcudart.so.12``, ``libcublasLt.so.13``):
in a container of the other major those are missing, and the package fails when it first touches
the GPU. PyPI's own CUDA runtimes (``nvidia-cuda-runtime-cu12`` and friends) bring the libraries
along, so a tree that ships them needs nothing of the container. So the rule is: every CUDA soname
a shipped ELF file needs must be in the tree, or of the container's CUDA major.

Only libraries whose soname major *is* the CUDA major are read (cudart, cuBLAS, cuBLASLt, NVRTC):
cuFFT, cuRAND and cuDNN number their sonames on their own. Wheels that load CUDA with ``dlopen``
name their major in their distribution name (``cupy-cuda12x``, ``jax-cuda12-plugin``) or their
local version (``torch==2.7.0+cu126``), and are read from that.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

__all__ = ["CudaNeeds", "cuda_needs", "elf_needed", "requirement_majors"]

_CUDA_SONAME = re.compile(r"lib(?:cudart|cublas|cublasLt|nvrtc)\.so\.(\d+)")
_NATIVE = re.compile(r"\.so(\.\d+)*$")
_BY_NAME = (
    re.compile(r"cupy-cuda(\d\d)x"),  # cupy-cuda12x
    re.compile(r"jax-cuda(\d\d)-(?:plugin|pjrt)"),  # jax-cuda12-plugin
)
_LOCAL_CUDA = re.compile(r"\+cu(\d\d)\d$")  # 2.7.0+cu126, +cu130

_DT_NEEDED, _SHT_DYNAMIC = 1, 6


def elf_needed(path: str) -> tuple[str, ...]:
    """The ``DT_NEEDED`` sonames of a 64-bit little-endian ELF file; empty for anything else."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return ()
            (shoff,) = struct.unpack_from("<Q", header, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
            if not shoff or shentsize < 64:
                return ()
            handle.seek(shoff)
            sections = [struct.unpack_from("<IIQQQQIIQQ", handle.read(shentsize)) for _ in range(shnum)]
            found: list[str] = []
            for _, kind, _, _, offset, size, link, _, _, entsize in sections:
                if kind != _SHT_DYNAMIC or link >= len(sections):
                    continue
                strtab = sections[link]
                handle.seek(strtab[4])
                strings = handle.read(strtab[5])
                handle.seek(offset)
                dynamic = handle.read(size)
                step = entsize or 16
                for start in range(0, len(dynamic) - 15, step):
                    tag, value = struct.unpack_from("<qQ", dynamic, start)
                    if tag == 0:
                        break
                    if tag == _DT_NEEDED and value < len(strings):
                        found.append(strings[value : strings.index(b"\0", value)].decode("ascii", "replace"))
            return tuple(found)
    except (OSError, struct.error, ValueError):
        return ()


class CudaNeeds:
    """The CUDA majors one tree needs of its container, and who needs them."""

    def __init__(self) -> None:
        self.needed: dict[int, dict[str, set[str]]] = {}
        """major -> distribution -> what shows it (``libcudart.so.12 in onnxruntime/capi/x.so``, its name)."""
        self.sonames: dict[int, set[str]] = {}
        """major -> the CUDA sonames the tree's files need (a name-based need stands for ``libcudart.so.N``)."""
        self.shipped: set[str] = set()
        """CUDA sonames the tree ships itself (PyPI's ``nvidia-*-cuNN`` runtimes)."""

    def add(self, major: int, soname: str, distribution: str, evidence: str) -> None:
        self.needed.setdefault(major, {}).setdefault(distribution, set()).add(evidence)
        self.sonames.setdefault(major, set()).add(soname)

    @property
    def majors(self) -> tuple[int, ...]:
        """The majors the container must provide: some soname of it is needed and not shipped in the tree."""
        return tuple(sorted(m for m, names in self.sonames.items() if not names <= self.shipped))

    def describe(self, major: int) -> str:
        """``onnxruntime-gpu 1.22.0 (libcublasLt.so.12 in onnxruntime/capi/...so)``, one per distribution."""
        return "; ".join(
            f"{dist} ({', '.join(sorted(evidence)[:2])}{', ...' if len(evidence) > 2 else ''})"
            for dist, evidence in sorted(self.needed.get(major, {}).items())
        )


def cuda_needs(distributions: Iterable[tuple[str, str, Mapping[str, str]]]) -> CudaNeeds:
    """What a tree needs of CUDA: ``distributions`` are (name, version, tree path -> file on disk)."""
    needs = CudaNeeds()
    for name, version, files in distributions:
        label = f"{name} {version}"
        for pattern in _BY_NAME:
            if match := pattern.fullmatch(name.lower().replace("_", "-")):
                needs.add(int(match[1]), f"libcudart.so.{match[1]}", label, f"its name, {name}")
        if match := _LOCAL_CUDA.search(version):
            needs.add(int(match[1]), f"libcudart.so.{match[1]}", label, f"its version, {version}")
        for relative, path in files.items():
            base = PurePosixPath(relative).name
            if not _NATIVE.search(base):
                continue
            if _CUDA_SONAME.fullmatch(base):
                needs.shipped.add(base)
            for soname in elf_needed(path):
                if match := _CUDA_SONAME.fullmatch(soname):
                    needs.add(int(match[1]), soname, label, f"{soname} in {relative}")
    return needs


def requirement_majors(requirement: str) -> tuple[int, ...]:
    """The CUDA majors a ``dist==version`` the image installs needs, read from its name and version alone
    (``torch==2.13.0+cu126``, ``cupy-cuda12x``): it is not shipped, so there are no libraries to read."""
    name, _, version = requirement.partition("==")
    return cuda_needs([(name, version, {})]).majors
