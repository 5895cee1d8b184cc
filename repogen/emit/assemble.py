"""IR → the plan of a repository: relative path → the bytes of a generated file, or a user's file to copy.

Emitting writes nothing: it reads the sources it ships and checks, hashes the user's files (networks,
shipped files, included directories) in chunks without keeping them (``hashing.FileCopy``), and hands
the plan to the writer, which copies those and makes the build atomic. The payloads come pickled, with
the package trees they ship and the containers those reach, from the plan made before (``plan.py``).
Models and ensembles come from ``files``, fused ensembles from ``fused``; this module puts them together
with the manifest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from .. import sbom
from ..hashing import Entry, digest
from ..ir.sites import declared_at
from ..ir.spec import EnsembleSpec, RepositorySpec
from ..runtime.contract import CONFIG_FILE, MANIFEST_FILE, MANIFEST_FORMAT, METADATA_FILE, SBOM_FILE, Manifest, dumps
from ..triton.server_options import server_record
from ..version import __version__
from .fused_model import emit_fused
from .included import emit_included
from .model_files import emit_ensemble, emit_model, emit_network
from .payloads import PayloadPlan, build_environment
from .plan import Progress, emission_order, plan_payloads

__all__ = ["Progress", "emit_repository"]


def emit_repository(
    spec: RepositorySpec, plan: PayloadPlan | None = None, progress: Progress | None = None
) -> dict[str, Entry]:
    """Every file of the repository, including its SBOM and the root manifest of their hashes.

    ``plan`` (``plan.plan_payloads``: every payload pickled, for the containers its packages reach; by
    default for every NGC container from 23.10, recording requirements only) is recorded in every
    ``model.json`` and in the manifest. ``progress`` hears of the models the plan did not: exported
    networks and included directories, whose files are hashed here.
    """
    plan = plan if plan is not None else plan_payloads(spec)
    files: dict[str, Entry] = {}
    order = emission_order(spec)
    planned = len(spec.models) + len(spec.ensembles)  # their progress lines came while the plan pickled them
    for done, (name, emit) in enumerate(_emitters(spec, plan), start=1):
        with declared_at(spec.site(name)):  # a failure (a file that clashes, an old field) names the declaration
            files.update(emit())
        if progress is not None and done > planned:
            progress(done, len(order), name)
    files[SBOM_FILE] = sbom.document(_records(files), {path: digest(entry) for path, entry in files.items()})
    files[MANIFEST_FILE] = _manifest(spec, plan, files)
    return dict(sorted(files.items()))


def _emitters(spec: RepositorySpec, plan: PayloadPlan) -> list[tuple[str, Callable[[], dict[str, Entry]]]]:
    """In emission order: models, ensembles, exported networks, included directories."""

    def ensemble_files(ensemble: EnsembleSpec) -> dict[str, Entry]:
        fused = spec.fused_spec(ensemble.name)
        return emit_fused(fused, plan) if fused is not None else emit_ensemble(ensemble)

    return [
        *((m.name, functools.partial(emit_model, m, plan)) for m in spec.models),
        *((e.name, functools.partial(ensemble_files, e)) for e in spec.ensembles),
        *((n.name, functools.partial(emit_network, n)) for n in spec.networks),
        *((i.name, functools.partial(emit_included, i, plan.targets)) for i in spec.included),
    ]


def _manifest(spec: RepositorySpec, plan: PayloadPlan, files: dict[str, Entry]) -> bytes:
    trees = plan.packager.trees if plan.packager is not None else {}
    return dumps(
        {
            Manifest.BUILD: build_environment(),
            Manifest.FILES: {path: digest(entry) for path, entry in sorted(files.items())},
            Manifest.FORMAT: MANIFEST_FORMAT,
            Manifest.MODELS: list(spec.names),
            **({Manifest.PACKAGES: dict(sorted(trees.items()))} if trees else {}),
            Manifest.REPOGEN: __version__,
            **plan.payloads.record(),
            **server_record(spec.server, _records(files)),
        }
    )


def _records(files: dict[str, Entry]) -> dict[str, bytes]:
    """The model.json and config.pbtxt files the SBOM reads, as bytes (an included directory's, copied, from disk)."""
    return {
        path: entry if isinstance(entry, bytes) else entry.source.read_bytes()
        for path, entry in files.items()
        if path.endswith((f"/{METADATA_FILE}", f"/{CONFIG_FILE}"))
    }
