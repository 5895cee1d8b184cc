"""Build repositories with another Python: a venv per interpreter holding repogen from this checkout.

A repository must serve on every NGC container's Python whatever Python built it, so the tests
build with 3.10, 3.12 and 3.13 as well as with the dev venv's. ``ensure_builder_venv("3.13")``
makes ``<cache>/builder-venv-py3.13`` once (``pip install -e <checkout>``, no dev extras, with the
checkout's ``constraints.txt``: the numpy and cloudpickle the golden payloads are built with) and
reinstalls it when ``pyproject.toml`` or the constraints change; the source itself is live (editable install),
and a checkout elsewhere (CI's fresh clone) reinstalls repogen alone into it.
It is built beside and renamed into place under a file lock, like the server venv
(:mod:`repogen.server.provision.install`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from repogen.errors import BuildWithError
from repogen.hashing import sha256_bytes, sha256_file
from repogen.server.provision.install import (
    ServerInstallError,
    default_cache_dir,
    locked,
    publish,
    relocate_scripts,
    run_step,
)
from repogen.server.provision.pythons import require_python

__all__ = ["BUILDER_MARKER", "BuildWithError", "build_with", "checkout_root", "ensure_builder_venv"]

BUILDER_MARKER = ".repogen-builder.json"
CONSTRAINTS = "constraints.txt"
"""The checkout's pins of what a build's payloads depend on (numpy, cloudpickle), applied to every builder venv."""


def checkout_root() -> Path:
    """The repogen checkout this module runs from (builder venvs install it editable)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "repogen").is_dir():
        raise ServerInstallError(
            f"builder venvs install repogen from a source checkout, but {root} has no pyproject.toml; "
            "run the tests from a git checkout of repogen (pip install -e .)."
        )
    return root


def _wanted(root: Path, version: str, packages: tuple[str, ...] = ()) -> dict[str, str]:
    """What a current builder venv's marker says: rebuild when any of it changes."""
    return {
        "python_version": version,
        "checkout": str(root),
        "pyproject_sha256": sha256_file(root / "pyproject.toml"),
        **({"constraints_sha256": sha256_file(root / CONSTRAINTS)} if (root / CONSTRAINTS).is_file() else {}),
        **({"packages": " ".join(packages)} if packages else {}),
    }


def _constraints(root: Path) -> list[str]:
    return ["-c", str(root / CONSTRAINTS)] if (root / CONSTRAINTS).is_file() else []


def _venv_name(version: str, packages: tuple[str, ...]) -> str:
    """``builder-venv-py3.11``, or ``builder-venv-py3.11-<hash of the packages>`` for an app's own set."""
    suffix = f"-{sha256_bytes(' '.join(packages).encode())[:10]}" if packages else ""
    return f"builder-venv-py{version}{suffix}"


def _is_current(venv: Path, wanted: dict[str, str], but: str = "") -> bool:
    """Whether the venv's marker says all of ``wanted`` (all of it but the ``but`` key) and its base exists."""
    try:
        marker = json.loads((venv / BUILDER_MARKER).read_text())
    except (OSError, ValueError):
        return False
    base = marker.get("base", "")
    return all(marker.get(k) == v for k, v in wanted.items() if k != but) and bool(base) and Path(base).exists()


def _repoint(venv: Path, root: Path, wanted: dict[str, str]) -> None:
    """The venv's editable repogen installed anew from ``root``, its dependencies and packages kept as they are.

    Only the checkout changed (the same pyproject.toml, constraints and packages): CI clones into a new directory
    every run, and a venv made anew costs ~20 s on 2 cores, a minute with jax or scikit-learn; this ~4 s. The
    marker goes first, so that no one takes the venv for current while its repogen is being swapped.
    """
    marker_path = venv / BUILDER_MARKER
    marker = json.loads(marker_path.read_text())
    marker_path.unlink()
    run_step(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
         "--quiet", "--no-deps", "-e", str(root)],
        f"installing repogen from {root} into {venv}",
        f"{venv} is made anew on the next try; the output above says what failed.",
    )  # fmt: skip
    marker_path.write_text(json.dumps({**marker, **wanted}, indent=2) + "\n")


def ensure_builder_venv(version: str, cache_dir: str | Path | None = None, packages: tuple[str, ...] = ()) -> Path:
    """``<cache>/builder-venv-py<version>`` with repogen from this checkout; created or refreshed once, and a venv
    of another checkout of the same pyproject.toml and constraints gets this one's repogen alone (``_repoint``).

    ``packages`` (pinned requirements) are installed too, in a venv of their own: what a user's
    app imports at build time (scikit-learn, onnxruntime, ...), so a build can ship them.
    """
    root = checkout_root()
    cache = Path(cache_dir).resolve() if cache_dir is not None else default_cache_dir()
    packages = tuple(sorted(packages))
    final = cache / _venv_name(version, packages)
    wanted = _wanted(root, version, packages)
    if _is_current(final, wanted):
        return final
    with locked(cache, final.name):
        if _is_current(final, wanted):
            return final
        if _is_current(final, wanted, but="checkout"):
            _repoint(final, root, wanted)
            return final
        base = require_python(version)
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{final.name}.tmp-"))
        try:
            run_step(
                [str(base), "-m", "venv", "--clear", str(tmp)],
                f"creating a Python {version} venv with {base}",
                "Install the interpreter's venv/ensurepip module (Debian: apt-get install python3-venv).",
            )
            run_step(
                [str(tmp / "bin" / "python"), "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                 "--quiet", "-e", str(root), *packages, *_constraints(root)],
                f"installing repogen from {root} into a Python {version} venv",
                f"Each dependency in {root / 'pyproject.toml'} needs a wheel (or an sdist that builds) for "
                f"Python {version}; the output above names the one that has none.",
            )  # fmt: skip
            relocate_scripts(tmp / "bin", tmp, final)
            marker = {**wanted, "base": str(base)}
            (tmp / BUILDER_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            publish(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def build_with(
    version: str,
    app: str,
    output: str | Path,
    *extra_args: str,
    cache_dir: str | Path | None = None,
    packages: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Run ``repogen build APP -o OUTPUT [extra_args]`` under Python ``version``, from the checkout root.

    ``packages`` are installed in the builder venv beside repogen (see :func:`ensure_builder_venv`).
    Raises :class:`BuildWithError` with the command's stdout and stderr when it fails.
    """
    venv = ensure_builder_venv(version, cache_dir, packages)
    root = checkout_root()
    cmd = [str(venv / "bin" / "python"), "-m", "repogen", "build", app, "-o", str(output), *extra_args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if cache_dir is not None:  # the wheels a build ships are cached beside the venvs
        env["REPOGEN_CACHE_DIR"] = str(Path(cache_dir).resolve())
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildWithError(
            f"repogen build under Python {version} failed (exit code {proc.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
    return proc
