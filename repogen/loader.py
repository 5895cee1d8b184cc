"""Finding the user's ``Repository`` from ``path/to/app.py:attr`` or ``package.module:attr``."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
import sysconfig
import traceback
import types
from pathlib import Path

from .dsl.pytriton import loading_app
from .dsl.repository import Repository
from .dsl.site import Site, shown
from .errors import BuildError, UsageError


@dataclasses.dataclass(frozen=True)
class LoadedApp:
    repository: Repository
    app_dir: Path
    local_modules: tuple[types.ModuleType, ...]  # the user's own modules, pickled by value


def load_app(target: str, app_dir: str | os.PathLike[str] | None = None) -> LoadedApp:
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:  # malformed, as click.BadParameter: exit 2 with the usage line
        raise UsageError(
            f"app {target!r} is not of the form 'path/to/app.py:attr' or 'package.module:attr'; "
            "e.g. `repogen build examples/quickstart/app.py:models`"
        )
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        path = Path(module_part).resolve()
        if not path.is_file():
            raise BuildError(f"app file {module_part} does not exist (resolved to {path})")
        root = Path(app_dir).resolve() if app_dir else path.parent
        with loading_app():  # a Triton.serve() at module level refuses: the build does not serve
            module = _import_file(path, root)
    else:
        root = Path(app_dir).resolve() if app_dir else Path.cwd()
        _prepend_path(root)
        try:
            with loading_app():
                module = importlib.import_module(module_part)
        except Exception as exc:
            raise _import_failed(f"module {module_part!r} (from {root})", None, exc, root) from exc
    if not hasattr(module, attr):
        raise BuildError(f"{module_part} has no attribute {attr!r}; expected the repogen.Repository to build")
    repository = getattr(module, attr)
    if not isinstance(repository, Repository):
        raise BuildError(
            f"{module_part}:{attr} is a {type(repository).__name__}, expected a repogen.Repository "
            "(e.g. `models = Repository()`)"
        )
    return LoadedApp(repository=repository, app_dir=root, local_modules=local_modules(root))


def _prepend_path(root: Path) -> None:
    """First on sys.path, so the app's own siblings win over same-named modules elsewhere."""
    entry = str(root)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def _import_file(path: Path, root: Path) -> types.ModuleType:
    """Import the app from its file, under its dotted name relative to ``root``.

    Loading by location (not by name through sys.path) makes sure this very file is loaded even
    when another app of the same module name was loaded in this process before.
    """
    _prepend_path(root)
    _prepend_path(path.parent)
    try:
        parts = path.with_suffix("").relative_to(root).parts
    except ValueError:
        parts = (path.stem,)
    name = ".".join(parts)
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() == path:
        return existing
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BuildError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise _import_failed(shown(path), path, exc, root) from exc
    return module


def _import_failed(app: str, path: Path | None, exc: BaseException, root: Path) -> BuildError:
    """``app.py:16: importing the app failed: NameError: ...``, at the innermost line of the user's own code.

    The whole traceback, from the app's first frame on (importlib's left out), is the error's ``details``.
    """
    frames = [(frame, line) for frame, line in traceback.walk_tb(exc.__traceback__)]
    mine = [i for i, (frame, _) in enumerate(frames) if _is_users(frame.f_code.co_filename, root)]
    site = None
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:  # no frame of the file that does not compile
        site = Site(str(Path(exc.filename).resolve()), exc.lineno)
    elif mine:
        frame, line = frames[mine[-1]]
        site = Site(str(Path(frame.f_code.co_filename).resolve()), line)
    failed = (
        "importing the app failed" if site is not None and site.file == str(path) else f"importing the app {app} failed"
    )
    error = BuildError(
        f"{f'{site}: ' if site else ''}{failed}: {type(exc).__name__}: {exc}"
        " (`repogen build --traceback` shows the whole traceback)"
    )
    error.site = site
    tb = exc.__traceback__
    for _ in range(mine[0] if mine else 0):  # start at the app's own first frame
        tb = tb.tb_next if tb is not None else None
    error.details = "".join(traceback.format_exception(type(exc), exc, tb))
    return error


def _is_users(filename: str, root: Path) -> bool:
    """A file of the user's project: under the app directory, not installed, not repogen."""
    if filename.startswith("<"):
        return False
    path = Path(filename).resolve()
    return path.is_relative_to(root) and not any(path.is_relative_to(p) for p in _installed_roots())


def _installed_roots() -> list[Path]:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return [Path(paths[k]).resolve() for k in keys if k in paths] + [Path(__file__).resolve().parent]


def local_modules(root: Path) -> tuple[types.ModuleType, ...]:
    """Modules loaded from files under ``root`` that are not installed packages (nor repogen)."""
    installed = _installed_roots()
    found = []
    for _, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        if not path.is_relative_to(root) or any(path.is_relative_to(p) for p in installed):
            continue
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        found.append(module)
    return tuple(found)
