"""Reading the files of ``model_repository_templates/`` and of the vendored runtime."""

from __future__ import annotations

import functools
import importlib.metadata
import string
from importlib import resources
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def templates_dir() -> Path:
    checkout = _PACKAGE_DIR.parent / "model_repository_templates"
    if checkout.is_dir():  # source checkout or editable install
        return checkout
    return Path(str(resources.files("repogen.model_repository_templates")))


@functools.cache
def _template(name: str) -> string.Template:
    return string.Template((templates_dir() / name).read_text(encoding="utf-8"))


def render(name: str, **values: object) -> bytes:
    """Fill a template; a missing value is an error, never an empty string."""
    return _template(name).substitute({k: str(v) for k, v in values.items()}).encode("utf-8")


@functools.cache
def cloudpickle_files() -> tuple[tuple[str, bytes], ...]:
    """The installed cloudpickle, vendored beside each payload.

    By-value functions and classes unpickle through ``cloudpickle.cloudpickle`` helpers, and a
    stock server has no cloudpickle; shipping the exact version that pickled the payload is the
    only way its helpers match. Its BSD license travels with it.
    """
    import cloudpickle

    package = Path(cloudpickle.__file__).resolve().parent
    files = [(f"cloudpickle/{p.name}", p.read_bytes()) for p in sorted(package.glob("*.py"))]
    dist = importlib.metadata.distribution("cloudpickle")
    for entry in dist.files or ():
        if entry.name == "LICENSE":
            files.append(("cloudpickle/LICENSE", Path(str(dist.locate_file(entry))).read_bytes()))
            break
    return tuple(files)


@functools.cache
def runtime_files() -> tuple[tuple[str, bytes], ...]:
    """The runtime package's sources, as (path relative to ``repogen/``, bytes), sorted."""
    runtime = _PACKAGE_DIR / "runtime"
    return tuple(
        (f"runtime/{path.relative_to(runtime).as_posix()}", path.read_bytes()) for path in sorted(runtime.rglob("*.py"))
    )
