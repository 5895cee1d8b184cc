"""Find a CPython of a given ``major.minor``: the NGC containers' own Pythons beside the default one.

A server venv (and a builder venv) must run the Python that production runs: 3.10 in NGC
23.10-24.10, 3.12 from 24.11 (repogen.triton.releases). This looks in pyenv first (highest patch of
``<pyenv root>/versions/<X.Y>.*``; these machines build them with a shared libpython, which the
backend stub needs) and then for ``python<X.Y>`` on PATH, and runs each candidate to check that it
really is that version. ``python -m repogen.server.provision.pythons 3.10 3.12`` prints what it finds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from repogen.errors import PythonNotFoundError, ServerInstallError
from repogen.server.provision.install import probe_python
from repogen.triton.releases import Release, pairing_label

__all__ = ["PythonNotFoundError", "container_python_or_current", "find_python", "pyenv_root", "require_python"]

_VERSION = re.compile(r"^3\.\d+$")


def _check_version(version: str) -> str:
    version = version.strip()
    if not _VERSION.match(version):
        raise ValueError(f"expected a Python major.minor version such as 3.10 or 3.12, got {version!r}")
    return version


def pyenv_root() -> Path | None:
    """``$PYENV_ROOT``, else ``~/.pyenv``, else what ``pyenv root`` prints; ``None`` without pyenv."""
    env = os.environ.get("PYENV_ROOT")
    if env:
        return Path(env).expanduser()
    home = Path.home() / ".pyenv"
    if home.is_dir():
        return home
    pyenv = shutil.which("pyenv")
    if pyenv is None:
        return None
    try:
        out = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out) if out else None


def _pyenv_candidates(version: str) -> list[Path]:
    """``<root>/versions/<X.Y>.<patch>/bin/python``, highest patch first (no ``t``/``-dev`` variants)."""
    root = pyenv_root()
    if root is None:
        return []
    found = []
    for entry in (root / "versions").glob(f"{version}.*"):
        patch = entry.name.removeprefix(f"{version}.")
        if patch.isdigit() and (entry / "bin" / "python").exists():
            found.append((int(patch), entry / "bin" / "python"))
    return [path for _, path in sorted(found, reverse=True)]


def _searched(version: str) -> list[str]:
    """Where :func:`find_python` looks, in order, as shown in error messages."""
    root = pyenv_root()
    pyenv = f"{root}/versions/{version}.*/bin/python" if root else "pyenv (not installed)"
    return [pyenv, f"python{version} on PATH"]


def find_python(version: str) -> Path | None:
    """The base interpreter of Python ``version`` (``"3.10"``), or ``None`` when none is installed.

    Every candidate is run: a pyenv shim or a broken install that is not really ``version`` is skipped.
    """
    version = _check_version(version)
    candidates = _pyenv_candidates(version)
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        try:
            info = probe_python(candidate)
        except ServerInstallError:
            continue
        if info["python_version"] == version:
            return Path(info["base_executable"])
    return None


def require_python(version: str) -> Path:
    """:func:`find_python`, raising :class:`PythonNotFoundError` that says where it looked and how to install."""
    found = find_python(version)
    if found is None:
        raise PythonNotFoundError(
            f"Python {version} not found; searched {' and '.join(_searched(version))}. "
            f"Install it with `pyenv install {version}` (pyenv picks the newest {version}.x; build it with "
            f"PYTHON_CONFIGURE_OPTS=--enable-shared so the Triton backend stub can load its libpython), "
            f"or put a python{version} on PATH."
        )
    return found


def container_python_or_current(release: Release) -> tuple[Path, str, str | None]:
    """The interpreter to serve ``release`` with: its NGC container's Python when installed, else this one.

    Returns ``(interpreter, major.minor, note)``; ``note`` is the one line to print on the fallback,
    naming the container pairing this is not, and ``None`` otherwise.
    """
    wanted = release.python
    found = find_python(wanted)
    if found is not None:
        return found, wanted, None
    current = f"{sys.version_info[0]}.{sys.version_info[1]}"
    base = Path(getattr(sys, "_base_executable", None) or sys.executable)
    note = (
        f"Python {wanted} not found (pyenv install {wanted}); serving on {pairing_label(release, current)} "
        f"instead of NGC {release.ngc}'s Python {wanted}."
    )
    return base, current, note


def main(argv: list[str]) -> int:
    """Print the interpreter found for each version; exit 1 naming what to install if any is missing."""
    missing = []
    for version in argv or ["3.10", "3.12", "3.13"]:
        try:
            print(f"Python {version}: {require_python(version)}")
        except PythonNotFoundError as exc:
            print(exc, file=sys.stderr)
            missing.append(version)
    if missing:
        print(f"missing: Python {', '.join(missing)} (pyenv install {' '.join(missing)})", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
