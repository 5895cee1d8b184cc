"""A payload's requirements → one package tree per (container Python, machine), linked into the repository.

Why hard links: every model version gets a complete tree of its own (a model directory copied
alone, or localized by the server from object storage, still has everything), while N models that
need the same packages cost one copy on disk and in a tar archive, which stores a hard link once.
The files are the wheel cache's own (read-only), so a rebuild with unchanged dependencies writes
nothing but links. A tree's digest (``runtime.contract.digest_of``) is computed from the cache's
index, never by reading the files again.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import BuildError, UnreachableContainersError
from ..runtime.contract import dumps
from ..runtime.contract.package_trees import LISTING_SUFFIX, PACKAGES_DIR, digest_of
from ..triton.releases import RELEASES, Release, newest_with_cuda
from ..triton.targets import Targets
from . import metadata, resolve, wheels
from .cuda import CudaNeeds, cuda_needs, requirement_majors
from .indexes import cuda_evidence, cuda_labels
from .options import PackageOptions, canonical
from .resolve import Pin
from .wheel_targets import WheelTarget, wheel_targets

Log = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class ShippedTree:
    """One installed tree: what model.json records, and the cache file behind every path in it."""

    target: WheelTarget
    pins: tuple[Pin, ...]
    files: dict[str, str]  # path in the tree -> cache file
    listing: dict[str, str]  # path in the tree -> sha256
    bytecode: bool
    sizes: dict[str, int]  # cache file -> bytes
    cuda: tuple[int, ...] = ()
    """CUDA majors the container must provide for the tree's native libraries (``repogen.packages.cuda``)."""
    licenses: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # pin sha256 -> as its wheel states
    requires: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # canonical name -> names it requires

    @property
    def size(self) -> int:
        return sum(self.sizes.values())

    @functools.cached_property
    def digest(self) -> str:
        """Sorted over thousands of paths: computed once, though model.json and the manifest both record it."""
        return digest_of(self.listing.items())

    def record(self) -> dict[str, Any]:
        return {
            "bytecode": self.bytecode,
            "digest": self.digest,
            "files": len(self.listing),
            "lock": [self._locked(pin) for pin in self.pins],
            "size": self.size,
            **({"cuda": list(self.cuda)} if self.cuda else {}),
        }

    def _locked(self, pin: Pin) -> dict[str, Any]:
        """The pin as ``model.json`` records it, with its license and the lock's distributions it requires."""
        return {
            **pin.record(),
            "license": self.licenses.get(pin.sha256, {}),
            "requires": self.requires.get(canonical(pin.name), []),
        }


class Packager:
    """Ships what payloads import, for the build's targets; collects the links the writer makes."""

    def __init__(
        self,
        options: PackageOptions,
        targets: Targets,
        cache: Path,
        log: Log | None = None,
        find_python: Callable[[str], Path | None] = lambda python: None,
    ) -> None:
        """``find_python("3.10")`` is an interpreter of that minor to compile bytecode with (None: none here)."""
        self.options = options
        self.find_python = find_python
        self.containers = targets.containers
        self.targets = wheel_targets(targets, options.machines)
        self.numpy = (targets.containers or RELEASES)[0].numpy
        self.cache = cache / "packages"
        self.log = log or (lambda line: None)
        self.links: dict[str, str] = {}  # repository path -> cache file
        self.trees: dict[str, dict[str, Any]] = {}  # repository dir of a tree -> its record (for the manifest)
        self._shipped: dict[tuple[str, ...], dict[str, ShippedTree]] = {}
        self._trees: dict[tuple[object, ...], ShippedTree] = {}  # every tree made, whichever targets asked
        self._interpreters: dict[str, Path | None] = {}

    def narrowed(self, targets: Targets) -> Packager:
        """A packager for fewer containers (a build leaving out those its packages cannot reach) that reuses
        the trees this one made, where the containers a tree serves are the same, and the interpreters found."""
        packager = Packager(self.options, targets, self.cache.parent, self.log, self.find_python)
        packager._trees = self._trees
        packager._interpreters = self._interpreters
        return packager

    def ship(self, what: str, requirements: Mapping[str, str]) -> dict[str, ShippedTree]:
        """Tag -> tree for the distributions in ``requirements`` (module -> ``dist==version``) that ship."""
        self._check_provided(what, [req for req in requirements.values() if not self.options.ships(req.split("==")[0])])
        wanted = tuple(sorted({req for req in requirements.values() if self.options.ships(req.split("==")[0])}))
        if not wanted:
            return {}
        if wanted not in self._shipped:
            for name in (requirement.split("==")[0] for requirement in wanted):
                origin = resolve.local_origin(name)
                if origin:
                    raise BuildError(
                        f"{what} imports distribution {name}, installed from {origin} (not from a package index), so "
                        "the build cannot fetch it for the container. Move its modules under the app directory (they "
                        f"ship as source), or pass --provided {name} and install it in your image"
                    )
            self._shipped[wanted] = {t.tag: self._made(what, wanted, t) for t in self.targets}
        return self._shipped[wanted]

    def _made(self, what: str, wanted: tuple[str, ...], target: WheelTarget) -> ShippedTree:
        """The tree of ``wanted`` for ``target``, made once for the containers it serves and the numpy they have."""
        key = (wanted, target, self.numpy, self._serving(target.python))
        if key not in self._trees:
            self._trees[key] = self._tree(what, wanted, target)
        return self._trees[key]

    def _serving(self, python: str) -> tuple[Release, ...]:
        return tuple(c for c in self.containers if c.python == python)

    def _tree(self, what: str, wanted: tuple[str, ...], target: WheelTarget) -> ShippedTree:
        try:
            resolved = resolve.resolve(wanted, target, self.numpy, self.cache, what)
        except UnreachableContainersError as exc:
            raise UnreachableContainersError(str(exc), exc.reason, self._serving(target.python)) from None
        pins = tuple(p for p in resolved if self.options.ships(p.name))
        paths = wheels.fetch(pins, target, self.cache, what)
        unpacked = {pin.sha256: wheels.unpack(paths[pin.sha256], pin.sha256, self.cache, what) for pin in pins}
        needs = cuda_needs((p.name, p.version, _paths(*unpacked[p.sha256])) for p in pins)
        self._check_cuda(what, target, needs)
        interpreter = self._interpreter(target.python)
        overlays = (
            wheels.bytecode([(s, root) for s, (root, _) in unpacked.items()], target.python, interpreter, self.cache)
            if interpreter
            else {}
        )
        declared = {sha: metadata.read_metadata(root, index) for sha, (root, index) in unpacked.items()}
        graph = metadata.requirement_graph(pins, {sha: d[1] for sha, d in declared.items()}, target, wanted)
        files: dict[str, str] = {}
        listing: dict[str, str] = {}
        sizes: dict[str, int] = {}
        for pin in pins:
            layers = [unpacked[pin.sha256], *([overlays[pin.sha256]] if pin.sha256 in overlays else [])]
            for root, index in layers:
                base = str(root)
                for relative, (digest, length, _) in index.items():
                    if relative in files:
                        continue  # a path two wheels both ship: the first (by name) wins, as pip's order would
                    files[relative] = f"{base}/{relative}"
                    listing[relative] = str(digest)
                    sizes[files[relative]] = int(str(length))
        licenses = {sha: d[0] for sha, d in declared.items()}
        return ShippedTree(target, pins, files, listing, interpreter is not None, sizes, needs.majors, licenses, graph)

    def _check_provided(self, what: str, provided: list[str]) -> None:
        """The image installs these (``--provided``): one built for a CUDA major (``torch==2.13.0+cu126``) cannot
        serve in a targeted container of another."""
        for requirement in provided:
            for wrong in requirement_majors(requirement):
                lacking = tuple(c for c in self.containers if c.cuda != wrong)
                if not lacking:
                    continue
                first = lacking[0]
                raise UnreachableContainersError(
                    f"{what} imports {requirement}, which your image provides (--provided): a CUDA {wrong} build "
                    f"({cuda_evidence(requirement.partition('==')[2])}), but {first.label} has CUDA {first.cuda}, so "
                    f"it fails there on the GPU. Install its CUDA {first.cuda} build where you build "
                    f"({cuda_labels(first.cuda)}), or target a container with CUDA {wrong}{_elsewhere(wrong)}",
                    f"{requirement} (provided by the image) is a CUDA {wrong} build",
                    lacking,
                )

    def _check_cuda(self, what: str, target: WheelTarget, needs: CudaNeeds) -> None:
        """Refuse the targeted containers whose CUDA major differs from what the tree's libraries need."""
        if not needs.majors:
            return
        lacking = tuple(c for c in self._serving(target.python) if any(m != c.cuda for m in needs.majors))
        if not lacking:
            return
        first = lacking[0]
        wrong = next(m for m in needs.majors if m != first.cuda)
        reason = f"{needs.describe(wrong)} needs CUDA {wrong}"
        raise UnreachableContainersError(
            f"{what} ships {needs.describe(wrong)}: built for CUDA {wrong}, but {first.label} has CUDA {first.cuda} "
            f"(libcudart.so.{first.cuda}) and the repository ships no CUDA {wrong} runtime, so it fails there when it "
            f"touches the GPU. Install the CUDA {first.cuda} build of it where you build, target a container with CUDA "
            f"{wrong}{_elsewhere(wrong, target.python)}, or pass --provided NAME if your image has it",
            reason,
            lacking,
        )

    def _interpreter(self, python: str) -> Path | None:
        """A Python of the container's minor to compile bytecode with; without one, the server compiles into /tmp."""
        if python not in self._interpreters:
            if "{}.{}".format(*sys.version_info[:2]) == python:
                found: Path | None = Path(sys.executable)
            else:
                found = self.find_python(python)
            if found is None:
                self.log(
                    f"note: no Python {python} here to compile the shipped packages' bytecode; the server compiles "
                    "them on first load (into its temp directory), which slows the first start"
                )
            self._interpreters[python] = found
        return self._interpreters[python]

    def place(self, base: str, shipped: Mapping[str, ShippedTree]) -> dict[str, bytes]:
        """Link each tree under ``<base>/packages/<tag>/``; the listing files to write beside them."""
        listings = {}
        for tag, tree in shipped.items():
            directory = f"{base}/{PACKAGES_DIR}/{tag}"
            for relative, source in tree.files.items():
                self.links[f"{directory}/{relative}"] = source
            self.trees[directory] = tree.record()
            listings[directory + LISTING_SUFFIX] = tree.listing
        return {path: dumps(listing) for path, listing in listings.items()}

    def summary(self) -> str | None:
        """One line for the build: the bytes the packages add per target (each file counted once)."""
        if not self.trees:
            return None
        unique: dict[str, dict[str, int]] = {}
        for trees in self._shipped.values():
            for tag, tree in trees.items():
                unique.setdefault(tag, {}).update(tree.sizes)
        parts = [f"{tag} {sum(sizes.values()) / 1e6:.1f} MB" for tag, sizes in sorted(unique.items())]
        dists = sorted({canonical(p.name) for trees in self._shipped.values() for t in trees.values() for p in t.pins})
        return (
            f"Shipped {len(dists)} distribution(s) into {len(self.trees)} tree(s): {', '.join(parts)} "
            "(hard-linked: each file once on disk)"
        )

    def oversized(self, limit: int) -> list[str]:
        """Per container Python the trees ship more than ``limit`` bytes for (each file once), the heaviest first:
        ``Python 3.10 (x86_64): 2.1 GB, torch 2.13.0+cpu 1.9 GB, ...``."""
        unique: dict[str, dict[str, int]] = {}
        owners: dict[str, str] = {}  # unpacked wheel's sha256 -> "name version"
        for trees in self._shipped.values():
            for tag, tree in trees.items():
                unique.setdefault(tag, {}).update(tree.sizes)
                owners.update((p.sha256, f"{p.name} {p.version}") for p in tree.pins)
        found = []
        for tag, sizes in sorted(unique.items(), key=lambda item: -sum(item[1].values())):
            total = sum(sizes.values())
            if total <= limit:
                continue
            by_dist: dict[str, int] = {}
            for path, size in sizes.items():
                owner = owners.get(wheels.wheel_of(self.cache, path) or "", "other files")
                by_dist[owner] = by_dist.get(owner, 0) + size
            heaviest = sorted(by_dist.items(), key=lambda item: -item[1])[:3]
            target = next(t for t in self.targets if t.tag == tag)
            found.append(
                f"Python {target.python} ({target.machine}): {total / 1e9:.1f} GB, "
                + ", ".join(f"{name} {size / 1e9:.1f} GB" for name, size in heaviest)
            )
        return found


def _elsewhere(major: int, python: str | None = None) -> str:
    """`` (--triton-release 26.11 or another CUDA 13 release)``: where a build for CUDA ``major`` loads."""
    right = newest_with_cuda(major, python)
    return f" (--triton-release {right.ngc} or another CUDA {major} release)" if right else ""


def _paths(root: Path, index: Mapping[str, object]) -> dict[str, str]:
    """Tree path -> file on disk, for one unpacked wheel."""
    base = str(root)
    return {relative: f"{base}/{relative}" for relative in index}
