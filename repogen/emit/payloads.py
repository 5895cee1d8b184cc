"""How one build pickles a version's callables, and what it records about the payload.

A payload is pickled for the build's targets (portable: code as references into shipped sources;
pinned: this Python's bytecode), with the model handles it holds turned into BLS clients, and
every module it imports accounted for. A failure names the model and, for a part that cannot be
pickled, the path to it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import cloudpickle
import numpy as np

from ..errors import BuildError
from ..hashing import sha256_bytes
from ..ir.spec import ClientSpec
from ..runtime.bls import ModelClient
from ..runtime.records import METADATA_FORMAT, PAYLOAD_FILE, Metadata
from ..triton.targets import TARGETS, Targets
from ..version import __version__
from . import diagnose, pickling, requirements, sources
from .portability import check_grammar

if TYPE_CHECKING:
    from ..packages import Packager, ShippedTree


def build_environment() -> dict[str, str]:
    return {
        "cloudpickle": cloudpickle.__version__,
        "numpy": np.__version__,
        "python": "{}.{}".format(*sys.version_info[:2]),
    }


@dataclasses.dataclass(frozen=True)
class Payloads:
    """How one build pickles: for which containers, with which shipped sources (None: pinned bytecode)."""

    targets: Targets
    roots: tuple[str, ...]
    table: sources.SourceTable | None
    packager: Packager | None = None
    """Installs what payloads import into the repository (the build's); None records requirements only."""

    @classmethod
    def create(
        cls, targets: Targets | None = None, roots: Sequence[str] = (), packager: Packager | None = None
    ) -> Payloads:
        targets = targets or Targets(TARGETS)
        if targets.pinned:
            return cls(targets, tuple(roots), None, packager)
        relative = pickling.relative_to(pickling.search_roots(roots))
        table = sources.SourceTable(relative, check=lambda source: check_grammar(source, targets))
        return cls(targets, tuple(roots), table, packager)

    def place(self, base: str, payload: Payload) -> dict[str, bytes]:
        """The package trees of the version at ``base`` (linked by the writer); their listing files."""
        if self.packager is None or not payload.packages:
            return {}
        return self.packager.place(base, payload.packages)

    def record(self) -> dict[str, Any]:
        """What ``model.json`` and the manifest say about where the payloads serve."""
        target = self.targets.record()
        return {
            Metadata.PORTABLE: not self.targets.pinned,
            Metadata.PYTHONS: list(self.targets.pythons),
            **({Metadata.TARGET: target} if target is not None else {}),
        }


def clients_reducer(clients: Sequence[ClientSpec]) -> Callable[[Any], Any]:
    """The model handles the callables hold are pickled as BLS clients of the models they name."""
    by_id = {id(c.reference): c for c in clients}

    def reduce(obj: Any) -> Any:
        client = by_id.get(id(obj))
        if client is None or client.reference is not obj:
            return NotImplemented
        return ModelClient, (client.model, dict(client.input_types), client.outputs, client.decoupled, client.requested)

    return reduce


@dataclasses.dataclass(frozen=True)
class Payload:
    """A pickled payload, the sources it ships and what model.json records of it."""

    data: bytes
    shipped: dict[str, bytes]  # version-relative path -> bytes
    metadata: dict[str, Any]
    packages: dict[str, ShippedTree] = dataclasses.field(default_factory=dict)  # tag -> installed tree


def pickle_payload(
    what: str,
    obj: Any,
    callables: Sequence[tuple[str, Any]],
    clients: Sequence[ClientSpec],
    payloads: Payloads,
    imports: Sequence[str] = (),
) -> Payload:
    """Pickle ``obj``; ``callables`` (label, callable) are searched for the culprit when pickling fails.

    ``imports`` are modules the callables import when they run that pickling cannot see (a vendored
    runtime class's lazy ``import onnxruntime``): recorded and shipped like the ones it finds.
    """
    pickled = _pickled(what, obj, callables, clients_reducer(clients), payloads)
    if payloads.table is None:
        needs = requirements.third_party([*pickled.modules, *imports])
    else:
        app_dir = payloads.roots[0] if payloads.roots else "(none: pass roots=(<project dir>,) to build_repository)"
        needs = requirements.account(pickled.modules, [*pickled.imports, *imports], payloads.targets, what, app_dir)
    shipped, listed = sources.ship(pickled.sources)
    packages = payloads.packager.ship(what, needs) if payloads.packager is not None else {}
    metadata = {
        Metadata.BUILD: build_environment(),
        Metadata.FORMAT: METADATA_FORMAT,
        Metadata.PAYLOAD: {"file": PAYLOAD_FILE, "sha256": sha256_bytes(pickled.data)},
        Metadata.REPOGEN: __version__,
        Metadata.REQUIREMENTS: needs,
        Metadata.SOURCES: listed,
        **payloads.record(),
        **({Metadata.PACKAGES: {tag: tree.record() for tag, tree in packages.items()}} if packages else {}),
    }
    return Payload(pickled.data, shipped, metadata, packages)


def _pickled(
    what: str, obj: Any, callables: Sequence[tuple[str, Any]], handles: Callable[[Any], Any], payloads: Payloads
) -> pickling.Pickled:
    try:
        return pickling.dumps(obj, payloads.roots, handles, payloads.table)
    except BuildError as exc:
        raise BuildError(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pickle raises TypeError, PicklingError, AttributeError, ...
        failure = f"{type(exc).__name__}: {exc}"

    def pickles(part: Any) -> None:
        pickling.dumps(part, payloads.roots, handles, payloads.table)

    label, culprit = next(((label, f) for label, f in callables if _fails(pickles, f)), callables[0])
    path = " -> ".join(diagnose.locate(culprit, label, pickles))
    raise BuildError(
        f"{what}: cannot pickle {path}: {failure}. Locks, open files, sockets, threads and clients cannot travel to "
        "the server: create them there instead, in the __init__ of a class bound as the model (it runs once per "
        "instance inside the server) or lazily on the first call"
    ) from None


def _fails(pickles: Callable[[Any], None], part: Any) -> bool:
    try:
        pickles(part)
    except Exception:  # noqa: BLE001
        return True
    return False
