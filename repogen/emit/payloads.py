"""How one build pickles a version's callables, and what it records about the payload.

A payload is pickled for the build's targets (portable: code as references into shipped sources;
pinned: this Python's bytecode), with the model handles it holds turned into BLS clients, and
every module it imports accounted for. Live objects in their initial state (an unheld lock, an empty
queue, an executor that has run nothing) are made anew in the server (``pickling/live_objects.py``) and recorded,
with where the callable holds them, in ``model.json``. A failure names the model and, for a part that
cannot be pickled, the path to it; for a live object, why this one cannot be made anew. Each payload is
pickled once, while the build plans (``emit.plan``); what ``model.json`` records of it is made when the
files are emitted, for the targets the plan settled.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import cloudpickle
import numpy as np

from ..errors import BuildError
from ..hashing import sha256_bytes
from ..ir.spec import ClientSpec
from ..pickling import attribute_chains, cuda_scan, picklers, unpicklable
from ..pickling.live_objects import NotMadeAnew, refused
from ..pickling.shipped_sources import SourceFile, SourceTable
from ..runtime.bls import ModelClient
from ..runtime.contract import METADATA_FORMAT, PAYLOAD_FILE, Metadata
from ..triton.targets import TARGETS, Targets
from ..version import __version__
from . import requirements
from .portability import check_grammar

if TYPE_CHECKING:
    from ..packages import Packager, ShippedTree
    from ..pickling.shared_objects import Shared

MADE_ANEW = "made_anew"
"""``model.json``'s list of the live objects the server makes anew (``{"object", "at"}``). For the user to read:
the runtime never does, so the key is not among the runtime's (``records.Metadata``)."""


def build_environment() -> dict[str, str]:
    return {
        "cloudpickle": cloudpickle.__version__,
        "numpy": np.__version__,
        "python": "{}.{}".format(*sys.version_info[:2]),
    }


@dataclasses.dataclass
class Payloads:
    """How one build pickles: for which containers, with which shipped sources (None: pinned bytecode).

    ``targets`` narrow while the build plans its packages (``emit.plan``); a payload pickled and checked
    against more containers (grammar, standard library) holds for fewer, so it is never pickled again.
    """

    targets: Targets
    roots: tuple[str, ...]
    table: SourceTable | None = None

    @classmethod
    def create(cls, targets: Targets | None = None, roots: Sequence[str] = ()) -> Payloads:
        payloads = cls(targets or Targets(TARGETS), tuple(roots))
        if not payloads.targets.pinned:
            relative = picklers.relative_to(picklers.search_roots(roots))
            # each source is checked once, against the targets of the moment it is first shipped
            payloads.table = SourceTable(relative, check=lambda source: check_grammar(source, payloads.targets))
        return payloads

    def record(self) -> dict[str, Any]:
        """What ``model.json`` and the manifest say about where the payloads serve."""
        target = self.targets.record()
        return {
            Metadata.PORTABLE: not self.targets.pinned,
            Metadata.PYTHONS: list(self.targets.pythons),
            **({Metadata.TARGET: target} if target is not None else {}),
        }

    def metadata(self, payload: Payload, packages: Mapping[str, ShippedTree]) -> dict[str, Any]:
        """What ``model.json`` records of a payload and the package trees it ships, for these targets."""
        return {
            Metadata.BUILD: build_environment(),
            Metadata.FORMAT: METADATA_FORMAT,
            Metadata.PAYLOAD: {"file": PAYLOAD_FILE, "sha256": sha256_bytes(payload.data)},
            Metadata.REPOGEN: __version__,
            Metadata.REQUIREMENTS: payload.requirements,
            Metadata.SOURCES: payload.sources,
            **self.record(),
            **({Metadata.PACKAGES: {tag: tree.record() for tag, tree in packages.items()}} if packages else {}),
            **({MADE_ANEW: [dataclasses.asdict(made) for made in payload.made_anew]} if payload.made_anew else {}),
            **({Metadata.METRICS: list(payload.metrics)} if payload.metrics else {}),
        }


def clients_reducer(clients: Sequence[ClientSpec]) -> Callable[[Any], Any]:
    """The model handles the callables hold are pickled as BLS clients of the models they name."""
    by_id = {id(c.reference): c for c in clients}

    def reduce(obj: Any) -> Any:
        client = by_id.get(id(obj))
        if client is None or client.reference is not obj:
            return NotImplemented
        arguments: tuple[Any, ...] = (
            client.model, dict(client.input_types), client.outputs, client.decoupled, client.requested
        )  # fmt: skip
        if client.memory is not None or client.tensors != "numpy" or client.options:  # others' stay as they were
            arguments += (client.memory, client.tensors)
        if client.options:
            arguments += (client.options,)
        return ModelClient, arguments

    return reduce


@dataclasses.dataclass(frozen=True)
class PayloadUnit:
    """What one model version (or fused ensemble) pickles, and the callables searched when that fails."""

    model: str
    version: int
    what: str
    """``model 'M'``, ``model 'M' version 2``: how messages name it."""
    obj: Any
    callables: tuple[tuple[str, Any], ...]
    """(label, callable): searched for the culprit when ``obj`` cannot be pickled."""
    clients: tuple[ClientSpec, ...]
    imports: tuple[str, ...] = ()
    """Modules the callables import when they run that pickling cannot see (a vendored runtime class's lazy
    ``import onnxruntime``): recorded and shipped like the ones it finds."""
    apart: bool = False
    """Each callable is one instance's (``infer_func=[f, g]``): a CUDA tensor only one holds takes no memory in the
    instances serving another (``cuda_tensors``)."""

    @property
    def key(self) -> tuple[str, int]:
        return self.model, self.version


@dataclasses.dataclass(frozen=True)
class Payload:
    """A pickled payload, the sources it ships and the distributions it imports (``module -> dist==version``)."""

    data: bytes
    shipped: dict[str, bytes]  # version-relative path -> bytes
    sources: dict[str, dict[str, Any]]  # the ``sources`` entry of model.json
    requirements: dict[str, str]
    made_anew: tuple[MadeAnew, ...] = ()
    held: tuple[tuple[Any, str], ...] = ()
    """Instances of the user's classes and the objects made anew, in pickling order, each with how messages name it
    (``one app.Bot object``, ``a threading.Lock()``): what two models may both hold (``pickling/shared_objects.py``)."""
    imports: frozenset[str] = frozenset()
    """Every module the payload imports, unpickled or called: the vendored runtime's part it reaches (``vendoring``)."""
    metrics: tuple[dict[str, Any], ...] = ()
    """The declarations of the user's metrics the callables hold, by name (``model.json``'s ``metrics``)."""


@dataclasses.dataclass(frozen=True)
class MadeAnew:
    """A live object the server makes anew: how (``queue.Queue(maxsize=0)``), and where the callable holds it."""

    object: str
    at: str  # ``infer_func -> attribute 'streamer' -> attribute 'text_queue'``


class LiveObjectError(BuildError):
    """A live object the server cannot make anew (a held lock, a queue with items, a thread): ``culprit``."""

    culprit: Any = None


def pickle_payload(unit: PayloadUnit, payloads: Payloads) -> Payload:
    """Pickle ``unit.obj`` for the targets of the moment; a module the server could not import fails it."""
    owners = cuda_scan.owners(unit.callables) if unit.apart else None
    pickled = _pickled(unit.what, unit.obj, unit.callables, clients_reducer(unit.clients), payloads, owners)
    if payloads.table is None:
        needs = requirements.third_party([*pickled.modules, *unit.imports])
    else:
        app_dir = payloads.roots[0] if payloads.roots else "(none: pass roots=(<project dir>,) to build_repository)"
        imports = [*pickled.imports, *unit.imports]
        needs = requirements.account(pickled.modules, imports, payloads.targets, unit.what, app_dir)
    shipped, listed = ship(pickled.sources)
    made = {id(obj): f"a {description}" for obj, description in pickled.made_anew}
    held = tuple(
        (obj, made.get(id(obj)) or f"one {unpicklable.describe(obj).removeprefix('a ')}") for obj in pickled.held
    )
    imported = frozenset([*pickled.modules, *pickled.imports, *unit.imports])
    metrics = declared_metrics(unit.what, pickled.metrics)
    return Payload(pickled.data, shipped, listed, needs, made_anew(unit, pickled), held, imported, metrics)


def ship(sources: Sequence[SourceFile]) -> tuple[dict[str, bytes], dict[str, dict[str, Any]]]:
    """The files to write into the version directory, and the ``sources`` entry of ``model.json``."""
    files = {s.path: s.data for s in sources if not s.vendored}
    listed: dict[str, dict[str, Any]] = {
        s.key: {"file": s.path, "sha256": s.sha256, **({"future": list(s.future)} if s.future else {})}
        for s in sorted(sources, key=lambda s: s.key)
    }
    return files, listed


def declared_metrics(what: str, metrics: Sequence[Any]) -> tuple[dict[str, Any], ...]:
    """The declarations of the user's metrics a payload holds, by name; two that differ under one name fail it."""
    found: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        declaration = metric.declaration()
        seen = found.setdefault(metric.name, declaration)
        if seen != declaration:
            raise BuildError(
                f"{what}: two metrics are named {metric.name!r}: {said(seen)} and {said(declaration)}; a name is "
                "one family on the server's /metrics: declare it once and use that object, or rename one"
            )
    return tuple(found[name] for name in sorted(found))


def said(declaration: dict[str, Any]) -> str:
    """``a counter with labels ['kind'] ("Tokens")``: how a conflict names each declaration."""
    buckets = f", buckets {declaration['buckets']}" if "buckets" in declaration else ""
    return f"a {declaration['kind']} with labels {declaration['labels']}{buckets} ({declaration['documentation']!r})"


def made_anew(unit: PayloadUnit, pickled: picklers.Pickled) -> tuple[MadeAnew, ...]:
    """What the payload makes anew in the server, each with the chain that holds it; one made as part of another
    (a Condition's lock, unless the callable holds it too) is that one's."""
    if not pickled.made_anew:
        return ()
    found = attribute_chains.walk(unit.callables, [id(obj) for obj, _ in pickled.made_anew])
    made = []
    for obj, description in pickled.made_anew:
        chain = found.chains.get(id(obj))
        if chain is None and id(obj) in pickled.inner:
            continue
        made.append(MadeAnew(description, chain or attribute_chains.not_traced(unit.callables[0][0])))
    return tuple(made)


@dataclasses.dataclass(frozen=True)
class PayloadPlan:
    """Every payload of a build, pickled once, with the package trees it ships, for the containers they reach.

    Made by ``emit.plan.plan_payloads`` before anything is emitted; the emitter writes the files of it.
    """

    payloads: Payloads
    pickled: Mapping[tuple[str, int], Payload]  # (model, version) -> its payload
    packages: Mapping[tuple[str, int], dict[str, ShippedTree]]  # (model, version) -> tag -> tree
    packager: Packager | None = None
    """The build's (``repogen.packages``), narrowed to the targets; None records requirements only."""
    left_out: tuple[LeftOut, ...] = ()
    """Containers a default build left out because the packages cannot reach them, in the order found."""
    shared: tuple[Shared, ...] = ()
    """Objects several models hold, each model with its own copy in the server (``pickling/shared_objects.py``)."""

    @property
    def targets(self) -> Targets:
        return self.payloads.targets

    def payload(self, model: str, version: int) -> Payload:
        return self.pickled[model, version]

    def metadata(self, model: str, version: int) -> dict[str, Any]:
        return self.payloads.metadata(self.pickled[model, version], self.packages.get((model, version), {}))

    def place(self, model: str, version: int) -> dict[str, bytes]:
        """The package trees of the version (linked by the writer); their listing files."""
        packages = self.packages.get((model, version))
        if self.packager is None or not packages:
            return {}
        return self.packager.place(f"{model}/{version}", packages)


@dataclasses.dataclass(frozen=True)
class LeftOut:
    """Containers a default build left out: which, why (a clause), and the ones it serves instead."""

    containers: str  # ``NGC 23.10-24.10 (Python 3.10)``
    reason: str
    serves: str


def _pickled(
    what: str,
    obj: Any,
    callables: Sequence[tuple[str, Any]],
    handles: Callable[[Any], Any],
    payloads: Payloads,
    owners: Mapping[int, tuple[int, int]] | None = None,
) -> picklers.Pickled:
    try:
        return picklers.dumps(obj, payloads.roots, handles, payloads.table, owners)
    except BuildError as exc:
        raise BuildError(f"{what}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pickle raises TypeError, PicklingError, AttributeError, ...
        failure = f"{type(exc).__name__}: {exc}"

    def pickles(part: Any) -> None:
        picklers.dumps(part, payloads.roots, handles, payloads.table)

    label, root = next(((label, f) for label, f in callables if _fails(pickles, f)), callables[0])
    path, culprit = unpicklable.locate(root, label, pickles, stop=lambda part: refused(part) is not None)
    live = refused(culprit)
    if live is not None:
        raise _live_error(f"{what}: cannot pickle {' -> '.join(path)}: {live}", live)
    raise BuildError(
        f"{what}: cannot pickle {' -> '.join(path)}: {failure}. Open files, sockets, threads, clients and locks in "
        "use cannot travel to the server: create them there instead, in the __init__ of a class bound as the model "
        "(it runs once per instance inside the server) or lazily on the first call"
    ) from None


def _live_error(message: str, live: NotMadeAnew) -> LiveObjectError:
    error = LiveObjectError(message)
    error.culprit = live.obj
    return error


def _fails(pickles: Callable[[Any], None], part: Any) -> bool:
    try:
        pickles(part)
    except Exception:  # noqa: BLE001
        return True
    return False
