"""What a build does with the distributions its payloads import."""

from __future__ import annotations

import dataclasses
import re

MODES = ("ship", "record")
"""``ship`` (default): install them into the repository. ``record``: only list them in ``model.json``
(for an image that installs them, as ``repogen deploy --docker``'s Dockerfile does)."""

ALWAYS_PROVIDED = ("numpy", "cloudpickle")
"""Never shipped: every NGC container has numpy (a second one breaks the stub's tensors), and the
cloudpickle that pickled the payload is vendored beside it."""


def canonical(name: str) -> str:
    """PEP 503 name: ``PyYAML``, ``pyyaml`` and ``py_yaml`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclasses.dataclass(frozen=True)
class PackageOptions:
    mode: str = "ship"
    provided: tuple[str, ...] = ()
    """Distributions the serving image has (torch in an image of your own): recorded, never shipped."""
    machines: tuple[str, ...] = ("x86_64",)
    """Linux machines to make trees for (``aarch64`` for the arm64 containers)."""

    def ships(self, distribution: str) -> bool:
        name = canonical(distribution)
        return self.mode == "ship" and name not in {canonical(p) for p in (*ALWAYS_PROVIDED, *self.provided)}
