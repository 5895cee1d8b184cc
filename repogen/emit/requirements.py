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

# numpy ships in every NGC tritonserver image; repogen's runtime and cloudpickle are vendored into each model
# version that needs them (cloudpickle into every one with requirements: vendoring.py); the stub provides
# triton_python_backend_utils.
_PROVIDED = frozenset({"numpy", "repogen", "cloudpickle", "triton_python_backend_utils", "__main__", "builtins"})
_VENDORED = ("repogen.runtime", "cloudpickle")


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _files(dist: str) -> frozenset[str]:
    """The POSIX paths a distribution installed (``RECORD``), to tell which one holds a module."""
    return frozenset(str(path) for path in importlib.metadata.distribution(dist).files or ())


def _distribution(top: str) -> str | None:
    dists = _distributions().get(top)
    if not dists:
        return None
    dist = sorted(dists)[0]
    return f"{dist}=={importlib.metadata.version(dist)}"


def _owner(module: str) -> tuple[str, str] | None:
    """(the module's key, ``dist==version``) for a module under a namespace several distributions share.

    ``google`` is protobuf's, google-auth's and googleapis-common-protos'; ``nvidia`` is every CUDA
    wheel's. The distribution whose files hold the module's own directory (or file) is the one to
    record and ship, keyed by the two-level name (``google.protobuf``).
    """
    parts = module.split(".")
    if len(parts) < 2:
        return None
    prefix = "/".join(parts[:2])
    for dist in sorted(set(_distributions().get(parts[0], ()))):
        if any(path == f"{prefix}.py" or path.startswith(f"{prefix}/") for path in _files(dist)):
            return ".".join(parts[:2]), f"{dist}=={importlib.metadata.version(dist)}"
    return None


def third_party(modules: Iterable[str]) -> dict[str, str]:
    """Module → ``distribution==version`` for what the server must have: top-level modules, and the
    two-level name under a namespace that several installed distributions share (``google.protobuf``)."""
    found: dict[str, str] = {}
    shared: set[str] = set()  # namespaces several distributions share, with a module resolved to its owner
    for module in sorted(set(modules)):
        top = module.split(".")[0]
        if top in _PROVIDED or is_stdlib(top) or top.startswith("_"):
            continue
        if len(set(_distributions().get(top, ()))) > 1:
            owned = _owner(module)
            if owned:
                found[owned[0]] = owned[1]
                shared.add(top)
                continue
        dist = _distribution(top)
        if dist:
            found.setdefault(top, dist)
    return {module: dist for module, dist in found.items() if module not in shared}


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
