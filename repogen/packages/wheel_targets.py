"""The (container Python, machine) pairs a build makes package trees for, and pip's words for them.

pip does not imply older manylinux tags from a newer one, so every tag a container's glibc loads
is listed, oldest first; ``linux_*`` wheels (built for one machine) never qualify.
"""

from __future__ import annotations

import dataclasses

from ..runtime.contract.package_trees import abi_tag, tree_tag
from ..triton.releases import RELEASES, Release
from ..triton.targets import Targets, python_key

_LEGACY = {
    "x86_64": ((5, "manylinux1"), (12, "manylinux2010"), (17, "manylinux2014")),
    "aarch64": ((17, "manylinux2014"),),
}
MACHINES = tuple(_LEGACY)


@dataclasses.dataclass(frozen=True)
class WheelTarget:
    python: str
    machine: str
    glibc: str
    containers: str
    """``NGC 23.10-24.10``: the targeted containers that serve with this Python."""

    @property
    def tag(self) -> str:
        return tree_tag(self.python, self.machine)

    @property
    def abi(self) -> str:
        return abi_tag(self.python)

    def platforms(self) -> list[str]:
        newest = int(self.glibc.split(".")[1])
        legacy = [f"{name}_{self.machine}" for minor, name in _LEGACY[self.machine] if minor <= newest]
        oldest = _LEGACY[self.machine][0][0]  # the oldest glibc the machine's manylinux tags name
        return legacy + [f"manylinux_2_{minor}_{self.machine}" for minor in range(oldest, newest + 1)]

    def pip_args(self) -> list[str]:
        platforms = [arg for platform in self.platforms() for arg in ("--platform", platform)]
        return ["--python-version", self.python, "--implementation", "cp", "--abi", self.abi, *platforms]

    def describe(self) -> str:
        return f"Python {self.python} on linux {self.machine} ({self.containers})"


def wheel_targets(targets: Targets, machines: tuple[str, ...]) -> list[WheelTarget]:
    """One target per container Python and machine; the oldest glibc among those containers bounds the tags."""
    found = []
    for python in targets.pythons:
        containers: list[Release] = [c for c in targets.containers if c.python == python]
        if containers:
            ngcs = [c.ngc for c in containers]
            where = f"NGC {ngcs[0]}" if len(ngcs) == 1 else f"NGC {ngcs[0]}-{ngcs[-1]}"
            glibc = min((c.glibc for c in containers), key=python_key)
        else:  # a build pinned to a Python no container runs: the oldest containers' C library
            glibc, where = RELEASES[0].glibc, f"Python {python}, which no NGC container runs"
        for machine in machines:
            found.append(WheelTarget(python, machine, glibc, where))
    return found
