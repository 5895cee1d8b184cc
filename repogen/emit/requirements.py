"""Every module a payload imports must be one the server has; the installed ones become requirements.

What unpickling imports by reference is either provided (the standard library of every target
Python, numpy, the vendored runtime and cloudpickle) or an installed distribution, recorded in
``model.json`` so that the runtime can name it when it is missing and ``repogen deploy`` can
install it. Anything else (a module from outside the app directory that no distribution
provides) would fail in the server, so it fails the build.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Iterable, Mapping

from ..errors import BuildError
from ..triton.targets import Targets
from .portability import check_stdlib, is_stdlib

# numpy ships in every NGC tritonserver image; repogen's runtime and cloudpickle are vendored
# into each model version; the stub provides triton_python_backend_utils.
_PROVIDED = frozenset({"numpy", "repogen", "cloudpickle", "triton_python_backend_utils", "__main__", "builtins"})
_VENDORED = ("repogen.runtime", "cloudpickle")


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distribution(top: str) -> str | None:
    dists = _distributions().get(top)
    if not dists:
        return None
    dist = sorted(dists)[0]
    return f"{dist}=={importlib.metadata.version(dist)}"


def third_party(modules: Iterable[str]) -> dict[str, str]:
    """Top-level module → ``distribution==version`` for what the server must have installed."""
    found = {}
    for module in sorted({m.split(".")[0] for m in modules}):
        if module in _PROVIDED or is_stdlib(module) or module.startswith("_"):
            continue
        dist = _distribution(module)
        if dist:
            found[module] = dist
    return found


def account(
    modules: Mapping[str, str], imports: Iterable[str], targets: Targets, what: str, app_dir: str
) -> dict[str, str]:
    """Requirements of a portable payload; a module the server could not import fails the build.

    ``modules`` are imported when the payload is unpickled (each with what needs it); ``imports``
    run when a shipped function is called: those are recorded when installed and refused only
    when a target Python's standard library lacks them.
    """
    check_stdlib([m for m in (*modules, *imports) if is_stdlib(m)], targets, what)
    for module, needer in modules.items():
        _check_module(module, needer, what, app_dir)
    return third_party([*modules, *imports])


def _check_module(module: str, needer: str, what: str, app_dir: str) -> None:
    top = module.split(".")[0]
    if top == "repogen" and module != "repogen" and not module.startswith(_VENDORED):
        raise BuildError(
            f"{what} refers to {needer}, which exists only at build time (the server has repogen's runtime, not "
            f"'{module}'). Keep build-time objects (Tensor, ModelConfig, Repository) out of the callable"
        )
    if top in _PROVIDED or top.startswith("_") or is_stdlib(top) or _distribution(top):
        return
    loaded = sys.modules.get(top)
    origin = getattr(loaded, "__file__", None) or "no file"
    raise BuildError(
        f"{what} needs module '{top}' ({origin}) for {needer}, but the server could not import it: it is not in the "
        f"standard library, not numpy, not under the app directory {app_dir} (whose modules ship with the model) "
        f"and no installed distribution provides it. Move it under the app directory (or pass --app-dir with a "
        f"directory that contains it), or install it as a package (`pip install -e <its project>`) so the build "
        f"records it as a requirement"
    )
