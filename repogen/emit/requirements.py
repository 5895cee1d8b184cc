"""Which installed distributions a pickled payload needs in the server."""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Iterable

# Modules the server has without installing anything: numpy ships in every NGC tritonserver
# image, repogen's runtime and cloudpickle are vendored into each model version.
_PROVIDED = frozenset({"numpy", "repogen", "cloudpickle", "triton_python_backend_utils", "__main__", "builtins"})


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def third_party(modules: Iterable[str]) -> dict[str, str]:
    """Top-level module → ``distribution==version`` for what the server must have installed."""
    found = {}
    for module in sorted({m.split(".")[0] for m in modules}):
        if module in _PROVIDED or module in sys.stdlib_module_names or module.startswith("_"):
            continue
        dists = _distributions().get(module)
        if dists:
            dist = sorted(dists)[0]
            found[module] = f"{dist}=={importlib.metadata.version(dist)}"
    return found
