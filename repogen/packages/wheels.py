"""The wheel cache: downloaded once by hash, unpacked once, compiled once per container Python.

``<cache>/packages/wheels/<sha256>/<file>.whl`` is verified against the lock before it is used;
``unpacked/<sha256>.2/`` is its install tree (``.data/purelib`` and ``platlib`` merged in, scripts and
headers left out) with an index of every file's sha256, size and mtime; ``bytecode/<sha256>.2-cpXY/``
holds that tree's ``__pycache__`` for one Python. Repositories hard-link these files, so each cached
file is read-only, and one whose size or mtime changed (edited through a link) is unpacked again.

No file of a tree is empty: object stores copy a repository file by file and KServe's S3 and Azure
downloads skip zero-byte objects, and a package tree holds hundreds of empty modules
(``joblib/externals/__init__.py``). An empty Python source gets :data:`EMPTY_SOURCE`, a comment that
compiles to the same module; any other empty file stays empty and the runtime accepts its absence
(:func:`repogen.runtime.contract.tree_differences`). ``.2``: trees unpacked before that are not reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from filelock import FileLock

from ..errors import BuildError
from ..hashing import sha256_file
from ..runtime.contract.package_trees import abi_tag
from .resolve import Pin
from .wheel_targets import WheelTarget

_COMPILER = Path(__file__).with_name("compile_bytecode.py")
_REVISION = ".2"
"""Part of every cached tree's name: a new revision when what a tree holds for the same wheel changes."""
EMPTY_SOURCE = b"# Empty in the wheel: repogen wrote this line so that copies which skip empty files keep it.\n"
SOURCE_SUFFIXES = (".py", ".pyi", ".pyx", ".pxd")


@contextlib.contextmanager
def _locked(cache: Path, name: str) -> Iterator[None]:
    (cache / "locks").mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / "locks" / f".{name}.lock"), timeout=1800):
        yield


def fetch(pins: Sequence[Pin], target: WheelTarget, cache: Path, what: str) -> dict[str, Path]:
    """sha256 -> the verified wheel file, downloading (with pip, as configured here) what is not cached."""
    found = {pin.sha256: cache / "wheels" / pin.sha256 / pin.wheel for pin in pins}
    missing = [pin for pin in pins if not found[pin.sha256].is_file()]
    if missing:
        with _locked(cache, "download"), tempfile.TemporaryDirectory(prefix="repogen-wheels-", dir=cache) as tmp:
            options = ["--no-deps", "--no-input", "--disable-pip-version-check", "--quiet", "--only-binary=:all:"]
            cmd = [sys.executable, "-m", "pip", "download", *options, *target.pip_args(), "-d", tmp]
            cmd += [pin.url for pin in missing]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
                raise BuildError(
                    f"{what}: downloading {', '.join(p.wheel for p in missing)} failed:\n{tail}\nThe build needs the "
                    "package index to ship them (once: wheels are cached); build with --packages record to ship nothing"
                )
            for pin in missing:
                _adopt(Path(tmp) / pin.wheel, pin, found[pin.sha256], what)
    return found


def _adopt(download: Path, pin: Pin, final: Path, what: str) -> None:
    digest = sha256_file(download) if download.is_file() else "no file"
    if digest != pin.sha256:
        raise BuildError(
            f"{what}: {pin.wheel} downloaded with sha256 {digest}, but the index listed {pin.sha256}; refusing it. "
            "Build again (a proxy may have altered it); if it persists, the index serves a changed file"
        )
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(download, final)


def _member_path(name: str, data_dir: str) -> str | None:
    """Where a wheel member goes in the install tree (None: not installed), refusing paths outside it."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError(f"member {name!r} points outside the install tree")
    if path.parts and path.parts[0] == data_dir:
        if len(path.parts) > 2 and path.parts[1] in ("purelib", "platlib"):
            return PurePosixPath(*path.parts[2:]).as_posix()
        return None  # scripts, headers, data: not importable, not shipped
    return path.as_posix()


def _index(root: Path) -> dict[str, list[object]]:
    index: dict[str, list[object]] = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            stat = path.stat()
            index[path.relative_to(root).as_posix()] = [sha256_file(path), stat.st_size, stat.st_mtime_ns]
    return index


def _intact(root: Path, index: dict[str, list[object]]) -> bool:
    """Sizes and mtimes as indexed: a file edited through a repository's hard link shows here too."""
    base = str(root)
    for relative, (_, size, mtime) in index.items():
        try:
            stat = os.stat(f"{base}/{relative}")
        except OSError:
            return False
        if stat.st_size != size or stat.st_mtime_ns != mtime:
            return False
    return True


def _current(root: Path, index_path: Path) -> dict[str, list[object]] | None:
    """The index of ``root`` when the tree is there as indexed, else None."""
    try:
        index = json.loads(index_path.read_text())
    except (OSError, ValueError):
        return None
    return dict(index) if _intact(root, index) else None


def _cached_tree(root: Path, make: object) -> dict[str, list[object]]:
    """The index of ``root``, (re)making the tree with ``make(tmp)`` when absent or altered."""
    index_path = root.with_name(root.name + ".json")
    index = _current(root, index_path)
    if index is not None:
        return index
    with _locked(root.parent.parent, root.name):
        index = _current(root, index_path)  # another build may have made it while this one waited
        if index is not None:
            return index
        tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
        try:
            make(tmp)  # type: ignore[operator]
            for folder, dirs, files in os.walk(tmp):
                for name in files:
                    os.chmod(Path(folder) / name, 0o444)
                for name in dirs:
                    os.chmod(Path(folder) / name, 0o755)
            index = _index(tmp)
            shutil.rmtree(root, ignore_errors=True)
            os.chmod(tmp, 0o755)
            os.rename(tmp, root)
            index_path.write_text(json.dumps(index, sort_keys=True))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return index


def unpacked_root(cache: Path, sha256: str) -> Path:
    """Where the wheel of ``sha256`` is unpacked in the cache."""
    return cache / "unpacked" / f"{sha256}{_REVISION}"


def bytecode_root(cache: Path, sha256: str, python: str) -> Path:
    """Where the ``__pycache__`` overlay of the wheel of ``sha256`` for ``python`` is compiled in the cache."""
    return cache / "bytecode" / f"{sha256}{_REVISION}-{abi_tag(python)}"


def wheel_of(cache: Path, path: str) -> str | None:
    """The sha256 of the wheel the shipped file ``path`` comes from (its unpacked tree or its bytecode overlay);
    None for a file of neither."""
    for folder in ("unpacked", "bytecode"):  # <sha256>.2 and <sha256>.2-<abi>: unpacked_root, bytecode_root
        prefix = f"{cache / folder}/"
        if path.startswith(prefix):
            name = path[len(prefix) :].split("/", 1)[0].partition("-")[0]
            return name[: -len(_REVISION)] if name.endswith(_REVISION) else None
    return None


def unpack(wheel: Path, sha256: str, cache: Path, what: str) -> tuple[Path, dict[str, list[object]]]:
    """The wheel's install tree in the cache, and its index (relative path -> [sha256, size, mtime_ns])."""
    root = unpacked_root(cache, sha256)
    root.parent.mkdir(parents=True, exist_ok=True)

    def make(tmp: Path) -> None:
        data_dir = "-".join(wheel.name.split("-")[:2]) + ".data"
        try:
            with zipfile.ZipFile(wheel) as archive:
                for info in archive.infolist():
                    relative = None if info.is_dir() else _member_path(info.filename, data_dir)
                    if relative is None:
                        continue
                    destination = tmp / relative
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(info) as source, destination.open("wb") as sink:
                        shutil.copyfileobj(source, sink)
                        if info.file_size == 0 and destination.suffix in SOURCE_SUFFIXES:
                            sink.write(EMPTY_SOURCE)
        except (zipfile.BadZipFile, ValueError) as exc:
            raise BuildError(
                f"{what}: cannot unpack {wheel}: {exc}; delete it from the cache and build again"
            ) from None

    return root, _cached_tree(root, make)


def bytecode(
    trees: Sequence[tuple[str, Path]], python: str, interpreter: Path, cache: Path
) -> dict[str, tuple[Path, dict[str, list[object]]]]:
    """sha256 -> the ``__pycache__`` overlay of that unpacked tree for ``python``, compiled by ``interpreter``."""
    overlays: dict[str, tuple[Path, dict[str, list[object]]]] = {}
    (cache / "bytecode").mkdir(parents=True, exist_ok=True)
    for sha256, tree in trees:
        root = bytecode_root(cache, sha256, python)

        def make(tmp: Path, tree: Path = tree) -> None:
            proc = subprocess.run(
                [str(interpreter), "-I", str(_COMPILER)], input=json.dumps([str(tree), str(tmp)]) + "\n",
                capture_output=True, text=True,
            )  # fmt: skip
            if proc.returncode != 0:
                raise BuildError(f"compiling {tree} with {interpreter} failed:\n{proc.stderr[-2000:]}")

        overlays[sha256] = (root, _cached_tree(root, make))
    return overlays
