"""Pin what a payload needs for one container Python: the builder's own versions, resolved by pip.

Every distribution installed where the build runs is a constraint (the container's numpy
replaces the builder's), so the closure pip resolves is the set of versions the user ran. When
one of them has no wheel for the target, pip's conflict is turned into a message naming the
distribution, the target and the nearest version that has one. A lock is cached by the hash of
everything that decides it, so a rebuild with unchanged dependencies never runs pip.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import BuildError, UnreachableContainersError
from ..hashing import sha256_bytes
from .indexes import pytorch_index
from .options import canonical
from .wheel_targets import WheelTarget

_PIP = [sys.executable, "-m", "pip"]
_QUIET = ["--no-input", "--disable-pip-version-check"]
_CONSTRAINT = re.compile(r"The user requested \(constraint\) ([A-Za-z0-9._-]+)==([^\s;]+)")
_NOT_FOUND = re.compile(
    r"Could not find a version that satisfies the requirement ([A-Za-z0-9._-]+)==(\S+) \(from versions: ([^)]*)\)"
)
LOCK_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Pin:
    """One wheel of a lock: what ``model.json`` records, and where the wheel comes from."""

    name: str
    version: str
    wheel: str
    sha256: str
    url: str

    @property
    def tag(self) -> str:
        """The wheel's compatibility tags (``cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64``)."""
        return "-".join(self.wheel.removesuffix(".whl").split("-")[-3:])

    def record(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256, "tag": self.tag, "version": self.version, "wheel": self.wheel}


@functools.cache
def installed_versions() -> dict[str, str]:
    """Canonical name -> version of every distribution installed where the build runs."""
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonical(name), dist.version)
    return dict(sorted(found.items()))


def local_origin(distribution: str) -> str | None:
    """The directory an installed distribution came from (editable or ``pip install <dir>``), else None."""
    try:
        text = importlib.metadata.distribution(distribution).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    info = json.loads(text)
    url = str(info.get("url", ""))
    return url.removeprefix("file://") if url.startswith("file:") and "archive_info" not in info else None


def resolve(requirements: Iterable[str], target: WheelTarget, numpy: str, cache: Path, what: str) -> tuple[Pin, ...]:
    """The wheels (every dependency included, numpy aside) that install ``requirements`` for ``target``."""
    wanted = sorted(set(requirements))
    installed = installed_versions()
    constraints = {name: version for name, version in installed.items() if name != "numpy"}
    constraints["numpy"] = numpy
    key = sha256_bytes(
        json.dumps(
            {
                "format": LOCK_FORMAT,
                "requirements": wanted,
                "constraints": constraints,
                "target": target.pip_args(),  # what pip resolves for, not which containers it stands for
            },
            sort_keys=True,
        ).encode()
    )
    path = cache / "locks" / f"{key}.json"
    try:
        return tuple(Pin(**pin) for pin in json.loads(path.read_text())["pins"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    pins = _run_pip(wanted, target, constraints, what)
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_suffix(f".{os.getpid()}.tmp")
    staged.write_text(json.dumps({"pins": [dataclasses.asdict(p) for p in pins]}, indent=1, sort_keys=True))
    staged.replace(path)
    return pins


def _run_pip(wanted: list[str], target: WheelTarget, constraints: dict[str, str], what: str) -> tuple[Pin, ...]:
    if importlib.util.find_spec("pip") is None:
        raise BuildError(
            f"{what} imports {', '.join(wanted)}, which ship inside the repository, but {sys.executable} has no pip "
            "to resolve and download them for the containers' Python. Install it (`python -m ensurepip`), or build "
            "with --packages record to only record them"
        )
    with tempfile.TemporaryDirectory(prefix="repogen-resolve-") as tmp:
        constraint_file = Path(tmp) / "constraints.txt"
        constraint_file.write_text("".join(f"{name}=={version}\n" for name, version in constraints.items()))
        report = Path(tmp) / "report.json"
        indexes: list[str] = []
        while True:
            cmd = [
                *_PIP, "install", "--dry-run", "--ignore-installed", *_QUIET, "--only-binary=:all:",
                "--target", str(Path(tmp) / "target"), "--report", str(report), *target.pip_args(),
                *indexes, "-c", str(constraint_file), *wanted,
            ]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True)
            more = [] if proc.returncode == 0 else _pytorch_indexes(proc.stdout + proc.stderr, indexes)
            if not more:
                break
            indexes += more  # a PyTorch build (torch==2.13.0+cpu) PyPI lacks: again, with PyTorch's index
        if proc.returncode != 0:
            message, reason = _failure(proc.stdout + proc.stderr, wanted, target, constraints, what)
            if reason is None:
                raise BuildError(message)
            raise UnreachableContainersError(message, reason)
        data = json.loads(report.read_text())
    pins = []
    for item in data.get("install", []):
        name = item["metadata"]["name"]
        if canonical(name) in ("numpy",):
            continue
        info = item["download_info"]
        url = info["url"]
        sha256 = (info.get("archive_info") or {}).get("hashes", {}).get("sha256") or ""
        pins.append(Pin(name, item["metadata"]["version"], url.rsplit("/", 1)[-1], sha256, url))
    return tuple(sorted(pins, key=lambda p: canonical(p.name)))


def _pytorch_indexes(output: str, used: list[str]) -> list[str]:
    """``--extra-index-url`` arguments for the PyTorch builds pip found on no index so far (packages.indexes)."""
    missing = [m.groups()[:2] for m in _NOT_FOUND.finditer(output)] + _CONSTRAINT.findall(output)
    urls = sorted({url for name, version in missing if (url := pytorch_index(name, version)) and url not in used})
    return [arg for url in urls for arg in ("--extra-index-url", url)]


def _failure(
    output: str, wanted: list[str], target: WheelTarget, constraints: dict[str, str], what: str
) -> tuple[str, str | None]:
    """pip's refusal as the user's fix, and the cause in a clause when it is that a distribution cannot
    reach the target's Python (None when pip failed for another reason: nothing to narrow)."""
    head = f"{what} needs {', '.join(wanted)}, which cannot ship for {target.describe()}"
    missing = _NOT_FOUND.search(output)
    if missing:
        name, version, listed = missing.groups()
        available = _versions(listed)
        return head + ": " + _no_wheel(name, version, available, target), _reason(name, version, available, target)
    for name, version in _CONSTRAINT.findall(output):
        if canonical(name) == "numpy":
            cause = _conflict(output)
            return (
                f"{head}: a distribution needs a numpy that the container lacks ({cause}); the container provides "
                f"numpy {version}, and numpy never ships with a model. Install a version that supports numpy "
                f"{version} where you build (the one before it usually does) and build again"
            ), f"a distribution needs a numpy other than the container's {version} ({cause})"
        available = _available(name, target)
        if version not in available:
            return head + ": " + _no_wheel(name, version, available, target), _reason(name, version, available, target)
    lines = [line for line in output.splitlines() if line.strip() and "Location 'file:" not in line][-12:]
    return (
        head
        + ". pip said:\n"
        + "\n".join(lines)
        + (
            "\nFix what pip names, build with --triton-release for the one container you deploy to, pass "
            "--provided NAME for what your image already has, or --packages record to ship nothing"
        )
    ), None


def _conflict(output: str) -> str:
    block = output.split("The conflict is caused by:", 1)[-1].split("To fix this", 1)[0]
    return "; ".join(line.strip() for line in block.splitlines() if line.strip())


def _available(name: str, target: WheelTarget) -> list[str]:
    """The versions of ``name`` with a wheel for ``target`` (pip lists them when asked for one that is not)."""
    with tempfile.TemporaryDirectory(prefix="repogen-none-") as nowhere:  # --dry-run installs nothing there
        cmd = [*_PIP, "install", "--dry-run", "--ignore-installed", "--no-deps", *_QUIET, "--only-binary=:all:",
               "--target", nowhere, *target.pip_args(), f"{name}==0.0.0.dev0"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
    found = _NOT_FOUND.search(proc.stdout + proc.stderr)
    return _versions(found.group(3)) if found else []


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0]))


def nearest(version: str, available: list[str]) -> str | None:
    """The newest final release not newer than ``version``, else the oldest newer one."""
    finals = sorted((v for v in available if re.fullmatch(r"[\d.]+", v)), key=_key)
    older = [v for v in finals if _key(v) <= _key(version)]
    newer = [v for v in finals if _key(v) > _key(version)]
    return older[-1] if older else (newer[0] if newer else None)


def _no_wheel(name: str, version: str, available: list[str], target: WheelTarget) -> str:
    close = nearest(version, available)
    head = f"{name} {version} (the version installed where the build runs) has no wheel for {target.describe()}"
    if close is None:
        return (
            f"{head}, and no version of {name} has a wheel for it. Build with --triton-release for a container whose "
            f"Python it supports, or pass --provided {name} if your image has it"
        )
    return (
        f"{head}. The nearest version that has one is {close}: install {name}=={close} where you build (`pip install "
        f"'{name}=={close}'`) and build again; or build with --triton-release for a container whose Python it "
        f"supports, or pass --provided {name} if your image has it"
    )


def _reason(name: str, version: str, available: list[str], target: WheelTarget) -> str:
    """``scikit-learn 1.9.1 (installed here) has no wheel for Python 3.10; scikit-learn 1.7.2 has one``."""
    close = nearest(version, available)
    tail = f"; {name} {close} has one" if close else f"; no version of {name} has one"
    return f"{name} {version} (installed here) has no wheel for Python {target.python} on {target.machine}{tail}"


def _versions(listed: str) -> list[str]:
    """pip's ``(from versions: 1.0, 1.1)`` as a list."""
    return [v.strip() for v in listed.split(",") if v.strip()]
