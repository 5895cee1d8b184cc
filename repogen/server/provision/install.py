"""Install a stock tritonserver (from the ``nvidia-pytriton`` wheel) and a numpy-only venv.

Both land in a cache directory, are built beside their final path and renamed into
place (an interrupted install never looks complete), are serialized with a file lock
(parallel test workers install once) and are a marker-file check when already present.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from repogen.triton.releases import DEFAULT_RELEASE, Release, Wheel, get_release, no_wheel

from .download import Report, ServerInstallError, download_wheel, verify_sha256

__all__ = [
    "ServerInstall",
    "ServerInstallError",
    "VenvInfo",
    "default_cache_dir",
    "ensure_server",
    "ensure_server_venv",
    "venv_info",
    "wheel_of",
]

INSTALL_MARKER = ".repogen-install.json"
VENV_MARKER = ".repogen-venv.json"
_WHEEL_MEMBERS = ("pytriton/tritonserver/", "nvidia_pytriton.libs/")
_LOCK_TIMEOUT_S = 1800.0


def default_cache_dir() -> Path:
    """``$REPOGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/repogen``, else ``~/.cache/repogen``."""
    env = os.environ.get("REPOGEN_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "repogen").resolve()


@dataclass(frozen=True)
class ServerInstall:
    """An extracted wheel: the wheel's layout is kept so the binaries' RPATHs still resolve."""

    release: Release
    root: Path

    @property
    def tritonserver_dir(self) -> Path:
        return self.root / "pytriton" / "tritonserver"

    @property
    def binary(self) -> Path:
        return self.tritonserver_dir / "bin" / "tritonserver"

    @property
    def libs_dir(self) -> Path:
        """Shared libraries the binaries need (put on ``LD_LIBRARY_PATH``)."""
        return self.root / "nvidia_pytriton.libs"

    @property
    def cache_directory(self) -> Path:
        """Value for ``--cache-directory`` (the response-cache implementations)."""
        return self.tritonserver_dir / "caches"

    @property
    def stub_pythons(self) -> tuple[str, ...]:
        """Python ``major.minor`` versions this install has a backend directory for."""
        found = (p.name.removeprefix("backends-py") for p in self.tritonserver_dir.glob("backends-py*"))
        return tuple(sorted(found, key=lambda v: tuple(int(x) for x in v.split("."))))

    def backend_directory(self, python_version: str) -> Path:
        """Value for ``--backend-directory`` whose Python backend embeds ``python_version``.

        The stub must match the serving venv's Python minor version, so each version gets
        its own backend directory (hard links, same depth as ``backends/`` for the RPATH).
        """
        path = self.tritonserver_dir / f"backends-py{python_version}"
        if not (path / "python" / "triton_python_backend_stub").is_file():
            raise ServerInstallError(
                f"tritonserver {self.release.tritonserver} has no Python backend stub for Python "
                f"{python_version}; it has stubs for {', '.join(self.stub_pythons) or 'none'}. "
                "Create the server venv with one of those interpreters "
                "(ensure_server_venv(python=...))."
            )
        return path


# --------------------------------------------------------------------------- helpers
# Shared with repogen.server.provision.pythons and repogen.testing.builders (the builder venvs).


@contextmanager
def locked(cache_dir: Path, name: str) -> Iterator[None]:
    """Serialize installers of ``name`` across processes (pytest-xdist workers, parallel CI jobs)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache_dir / f".{name}.lock"), timeout=_LOCK_TIMEOUT_S):
        yield


def publish(tmp: Path, final: Path) -> None:
    """Atomically move a finished build into place, replacing an unmarked leftover."""
    tmp.chmod(0o755)  # mkdtemp made it 0o700
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)


def run_step(cmd: Sequence[str], what: str, hint: str) -> None:
    """Run an installer step; on failure raise with its output and ``hint`` as the fix."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip().splitlines()[-30:]
        raise ServerInstallError(
            f"{what} failed (exit code {proc.returncode}): {' '.join(cmd)}\n" + "\n".join(output) + f"\n{hint}"
        )


# --------------------------------------------------------------------------- server


def wheel_of(release: Release) -> Wheel:
    """The PyPI wheel shipping ``release``; :class:`ServerInstallError` for a release no wheel ships."""
    if release.wheel is None:
        raise ServerInstallError(f"{no_wheel(release)}. Use the stock container instead: docker run {release.image}.")
    return release.wheel


def _check_platform(release: Release, wheel: Wheel) -> None:
    machine = platform.machine().lower()
    if sys.platform != "linux" or machine not in (wheel.platform, "amd64"):
        raise ServerInstallError(
            f"tritonserver {release.tritonserver} is installed from {wheel.filename}, which "
            f"runs on linux/{wheel.platform}; this machine is {sys.platform}/{machine}. "
            f"Use the stock container instead: docker run {release.image}."
        )


def _make_python_backends(tritonserver_dir: Path) -> None:
    """One backend directory per stub Python version, at the same depth as ``backends/``."""
    python_backend = tritonserver_dir / "backends" / "python"
    for stub in sorted(tritonserver_dir.glob("python_backend_stubs/*/triton_python_backend_stub")):
        target = tritonserver_dir / f"backends-py{stub.parent.name}" / "python"
        target.mkdir(parents=True)
        for src in [*python_backend.iterdir(), stub]:
            os.link(src, target / src.name)


def _extract_wheel(wheel: Path, tmp_root: Path) -> None:
    """Extract the server parts; modes come from the umask (the wheel stores 0o666/0o777)."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_root, members=[n for n in zf.namelist() if n.startswith(_WHEEL_MEMBERS)])
    tritonserver_dir = tmp_root / "pytriton" / "tritonserver"
    executables = [tritonserver_dir / "bin" / "tritonserver"]
    executables += tritonserver_dir.glob("python_backend_stubs/*/triton_python_backend_stub")
    for exe in executables:
        exe.chmod(exe.stat().st_mode | 0o755)
    _make_python_backends(tritonserver_dir)


def _is_installed(root: Path) -> bool:
    return (root / INSTALL_MARKER).is_file()


def ensure_server(
    release: str | Release = DEFAULT_RELEASE, cache_dir: str | Path | None = None, *, report: Report | None = None
) -> ServerInstall:
    """Install tritonserver ``release`` into ``<cache>/tritonserver-<version>`` once; then reuse it.

    ``report(done, total)`` follows the wheel's download (see :func:`download_wheel`).
    """
    rel = get_release(release)
    wheel = wheel_of(rel)
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    root = cache / f"tritonserver-{rel.tritonserver}"
    if _is_installed(root):
        return ServerInstall(rel, root)
    _check_platform(rel, wheel)
    with locked(cache, root.name):
        if _is_installed(root):
            return ServerInstall(rel, root)
        path = download_wheel(wheel, f"tritonserver {rel.tritonserver}", cache / "wheels", report)
        verify_sha256(path, wheel)
        tmp_root = Path(tempfile.mkdtemp(dir=cache, prefix=f".{root.name}.tmp-"))
        try:
            _extract_wheel(path, tmp_root)
            marker = {
                "tritonserver": rel.tritonserver,
                "wheel": wheel.filename,
                "sha256": wheel.sha256,
            }
            (tmp_root / INSTALL_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            publish(tmp_root, root)
        finally:
            shutil.rmtree(tmp_root, ignore_errors=True)
    return ServerInstall(rel, root)


# --------------------------------------------------------------------------- server venv


@dataclass(frozen=True)
class VenvInfo:
    """What the server needs to know about the serving venv."""

    path: Path
    python_version: str
    """``major.minor``: selects the backend stub."""
    libdir: str
    """The interpreter's ``LIBDIR``: its libpython must win over the system's (see DESIGN.md)."""
    numpy: str

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


_PROBE = (
    "import json, sys, sysconfig; print(json.dumps({"
    "'python_version': '%d.%d' % sys.version_info[:2], "
    "'libdir': sysconfig.get_config_var('LIBDIR') or '', "
    "'ldlibrary': sysconfig.get_config_var('INSTSONAME') or '', "
    "'base_executable': getattr(sys, '_base_executable', sys.executable)}))"
)


def probe_python(python: str | Path) -> dict[str, str]:
    """Ask an interpreter for its version, LIBDIR and base executable."""
    try:
        out = subprocess.run([str(python), "-c", _PROBE], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ServerInstallError(
            f"cannot run Python interpreter {python!s} ({exc}); pass an existing python executable "
            "as ensure_server_venv(python=...)."
        ) from exc
    result: dict[str, str] = json.loads(out.stdout)
    return result


def _warn_if_no_shared_libpython(info: dict[str, str]) -> None:
    """The stub loads libpython from LD_LIBRARY_PATH; without one in LIBDIR the system's is used."""
    soname = info.get("ldlibrary") or ""
    if not soname.startswith("libpython") or not (Path(info["libdir"]) / soname).exists():
        warnings.warn(
            f"Python {info['python_version']} at {info['base_executable']} has no shared libpython in "
            f"LIBDIR {info['libdir']!r}; the backend stub will load the system's libpython, which "
            "can mismatch this interpreter's stdlib. Prefer a Python built with --enable-shared.",
            stacklevel=3,
        )


def relocate_scripts(bin_dir: Path, old: Path, new: Path) -> None:
    """Rewrite the build-time path in activate scripts and shebangs after the rename."""
    old_b, new_b = os.fsencode(old), os.fsencode(new)
    for script in bin_dir.iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if old_b in data:
            script.write_bytes(data.replace(old_b, new_b))


def venv_info(venv: str | Path) -> VenvInfo:
    """Read what :func:`ensure_server_venv` recorded; probe the interpreter for other venvs."""
    path = Path(venv).resolve()
    marker = path / VENV_MARKER
    data = json.loads(marker.read_text()) if marker.is_file() else None
    if data is None:
        probe = probe_python(path / "bin" / "python")
        data = {**probe, "numpy": ""}
    return VenvInfo(path, data["python_version"], data["libdir"], data.get("numpy", ""))


def ensure_server_venv(
    python: str | Path | None = None,
    numpy: str = DEFAULT_RELEASE.numpy,
    cache_dir: str | Path | None = None,
    provided: Sequence[str] = (),
) -> Path:
    """Create ``<cache>/server-venv-py<X.Y>-numpy<ver>`` holding numpy only, like a stock container.

    ``python`` defaults to the base interpreter behind ``sys.executable``; its minor version
    must have a backend stub in the server install (see :meth:`ServerInstall.backend_directory`).
    ``provided``: requirements installed beside numpy, as an image of one's own has them (a ``-pyt-python-``
    image's torch); the venv's name then ends with a hash of them.
    """
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    if python is None:
        base = getattr(sys, "_base_executable", None) or sys.executable
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    else:
        base, version = str(python), probe_python(python)["python_version"]
    final = cache / f"server-venv-py{version}-numpy{numpy}"
    if provided:
        final = final.with_name(f"{final.name}-{hashlib.sha256(' '.join(provided).encode()).hexdigest()[:10]}")
    if (final / VENV_MARKER).is_file():
        return final
    with locked(cache, final.name):
        if (final / VENV_MARKER).is_file():
            return final
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{final.name}.tmp-"))
        try:
            _build_venv(base, numpy, tmp, final, tuple(provided))
            publish(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _build_venv(base: str, numpy: str, tmp: Path, final: Path, provided: tuple[str, ...] = ()) -> None:
    """Create the venv in ``tmp`` (paths already rewritten for ``final``), marker written last."""
    run_step(
        [base, "-m", "venv", "--clear", str(tmp)],
        f"creating a venv with {base}",
        "Install the interpreter's venv/ensurepip module (Debian: apt-get install python3-venv).",
    )
    py = tmp / "bin" / "python"
    run_step(
        [str(py), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
         "--only-binary=:all:", f"numpy=={numpy}", *provided],
        f"installing numpy=={numpy} {' '.join(provided)} into the server venv".replace("  ", " "),
        "Check network access to your package index (numpy wheels are needed once per Python version).",
    )  # fmt: skip
    info = probe_python(py)
    _warn_if_no_shared_libpython(info)
    relocate_scripts(tmp / "bin", tmp, final)
    marker = {
        "python_version": info["python_version"],
        "libdir": info["libdir"],
        "numpy": numpy,
        "base": base,
        **({"provided": list(provided)} if provided else {}),
    }
    (tmp / VENV_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
