"""The one program a model image carries: a static BusyBox, as ``/bin/sh``, for KServe's modelcar command.

KServe runs a modelcar image with ``args: [sh, -c, "ln -sf /proc/$$/root/models /mnt/models && sleep infinity"]``
(no ``command``: the image's entrypoint, if any, would come first), so the image needs ``sh``, ``ln`` and ``sleep``
and nothing else. A statically linked BusyBox stored once as ``/bin/sh`` is all three: BusyBox picks its applet
from the name it runs as, and Debian's ``busybox-static`` runs ``ln`` and ``sleep`` inside its shell without
looking them up (no links, so an image stays plain files). It comes from the user's machine, never from the
network: Debian's and Ubuntu's ``busybox-static`` package installs ``/bin/busybox``.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from ..errors import DeployError

__all__ = ["Shell", "find_shell"]

_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
_PT_INTERP = 3
_ARCHITECTURES = {62: "amd64", 183: "arm64", 243: "riscv64", 21: "ppc64le", 22: "s390x"}
"""ELF ``e_machine`` -> the OCI ``architecture`` Kubernetes matches against its nodes."""
_HOW = (
    "install Debian's or Ubuntu's busybox-static (`apt-get install busybox-static`, which installs /bin/busybox), "
    "or pass --shell PATH to a statically linked BusyBox for the cluster's architecture"
)


@dataclass(frozen=True)
class Shell:
    path: Path
    architecture: str
    data: bytes


def _architecture(path: Path, data: bytes) -> str:
    """The binary's OCI architecture; refused unless it is a 64-bit little-endian ELF with no program interpreter."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise DeployError(f"--shell {path} is not a 64-bit little-endian ELF executable; {_HOW}")
    machine, = struct.unpack_from("<H", data, 18)  # fmt: skip
    phoff, = struct.unpack_from("<Q", data, 32)  # fmt: skip
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for index in range(phnum):
        kind, = struct.unpack_from("<I", data, phoff + index * phentsize)  # fmt: skip
        if kind == _PT_INTERP:
            raise DeployError(
                f"--shell {path} is dynamically linked (it names a program interpreter); the image has no libraries "
                f"for it. Expected a static BusyBox: {_HOW}"
            )
    if machine not in _ARCHITECTURES:
        raise DeployError(f"--shell {path} is for ELF machine {machine}, which repogen does not map to an OCI "
                          f"architecture ({', '.join(sorted(_ARCHITECTURES.values()))}); {_HOW}")  # fmt: skip
    return _ARCHITECTURES[machine]


def find_shell(path: Path | None = None) -> Shell:
    """``path``, else the first static BusyBox found (``busybox`` on PATH, /bin/busybox, /usr/bin/busybox)."""
    if path is None:
        found = [p for p in (shutil.which("busybox"), *_CANDIDATES) if p and Path(p).is_file()]
        statics = [Path(p) for p in found if _is_static(Path(p))]
        if not statics:
            seen = f" ({', '.join(dict.fromkeys(found))} is dynamically linked)" if found else ""
            raise DeployError(f"no static BusyBox found for the image's /bin/sh{seen}; {_HOW}")
        path = statics[0]
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DeployError(f"--shell {path} cannot be read ({exc.strerror}); {_HOW}") from None
    architecture = _architecture(path, data)
    if b"BusyBox v" not in data:
        raise DeployError(
            f"--shell {path} is not BusyBox: KServe's modelcar command needs `ln` and `sleep` inside the shell, "
            f"which BusyBox's carries; {_HOW}"
        )
    return Shell(path, architecture, data)


def _is_static(path: Path) -> bool:
    try:
        _architecture(path, path.read_bytes())
    except (DeployError, OSError, struct.error):
        return False
    return True
