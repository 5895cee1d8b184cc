"""IR → the plan of a repository: relative path → the bytes of a generated file, or a user's file to copy.

Emitting writes nothing: it reads the sources it ships and checks, hashes the user's files (networks,
shipped files, included directories) in chunks without keeping them (``hashing.FileCopy``), and hands
the plan to the writer, which copies those and makes the build atomic. The one other I/O is the packager
it is given (``build.py``'s), which resolves and installs third-party packages into the wheel cache.
Models and ensembles come from ``files``, fused ensembles from ``fused``; this module puts them together
with the manifest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import sbom
from ..hashing import Entry, digest
from ..ir.sites import declared_at
from ..ir.spec import EnsembleSpec, RepositorySpec
from ..runtime.records import CONFIG_FILE, MANIFEST_FILE, MANIFEST_FORMAT, METADATA_FILE, SBOM_FILE, Manifest, dumps
from ..triton.targets import Targets
from ..version import __version__
from .files import emit_ensemble, emit_model, emit_network
from .fused import emit_fused
from .included import emit_included
from .payloads import Payloads, build_environment
from .release_rules import check_release_rules

if TYPE_CHECKING:
    from ..packages import Packager

# Called as each model is emitted: (models done, models in all, the model's name).
Progress = Callable[[int, int, str], None]


def emit_repository(
    spec: RepositorySpec,
    roots: Sequence[str] = (),
    targets: Targets | None = None,
    progress: Progress | None = None,
    packager: Packager | None = None,
) -> dict[str, Entry]:
    """Every file of the repository, including its SBOM and the root manifest of their hashes.

    ``targets`` (every NGC container from 23.10 unless ``--triton-version`` names one) decides what
    the shipped sources and imports are checked against; it is recorded in every ``model.json``
    and in the manifest.
    """
    files: dict[str, Entry] = {}
    payloads = Payloads.create(targets, roots, packager)
    check_release_rules(spec, payloads.targets)

    def ensemble_files(ensemble: EnsembleSpec) -> dict[str, Entry]:
        fused = spec.fused_spec(ensemble.name)
        return emit_fused(fused, payloads) if fused is not None else emit_ensemble(ensemble)

    # In this order, one progress line each: models, ensembles, exported networks, included directories.
    emitters: list[tuple[str, Callable[[], dict[str, Entry]]]] = [
        *((m.name, functools.partial(emit_model, m, payloads)) for m in spec.models),
        *((e.name, functools.partial(ensemble_files, e)) for e in spec.ensembles),
        *((n.name, functools.partial(emit_network, n)) for n in spec.networks),
        *((i.name, functools.partial(emit_included, i, targets)) for i in spec.included),
    ]
    for done, (name, emit) in enumerate(emitters, start=1):
        with declared_at(spec.site(name)):  # a failure (pickling, packages) names where the model was declared
            files.update(emit())
        if progress is not None:
            progress(done, len(emitters), name)
    files[SBOM_FILE] = sbom.document(_records(files), {path: digest(entry) for path, entry in files.items()})
    files[MANIFEST_FILE] = dumps(
        {
            Manifest.BUILD: build_environment(),
            Manifest.FILES: {path: digest(entry) for path, entry in sorted(files.items())},
            Manifest.FORMAT: MANIFEST_FORMAT,
            Manifest.MODELS: list(spec.names),
            **(
                {Manifest.PACKAGES: dict(sorted(packager.trees.items()))}
                if packager is not None and packager.trees
                else {}
            ),
            Manifest.REPOGEN: __version__,
            **payloads.record(),
        }
    )
    return dict(sorted(files.items()))


def _records(files: dict[str, Entry]) -> dict[str, bytes]:
    """The model.json and config.pbtxt files the SBOM reads, as bytes (an included directory's, copied, from disk)."""
    return {
        path: entry if isinstance(entry, bytes) else entry.source.read_bytes()
        for path, entry in files.items()
        if path.endswith((f"/{METADATA_FILE}", f"/{CONFIG_FILE}"))
    }
