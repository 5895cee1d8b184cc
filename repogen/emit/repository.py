"""IR → the complete file map of a repository: relative path → bytes, before anything is written.

Keeping emission pure (no disk I/O) lets the writer make the build atomic and lets tests compare
outputs without touching the file system. Models and ensembles come from ``files``, fused
ensembles from ``fused``; this module puts them together with the manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..hashing import sha256_bytes
from ..ir.spec import RepositorySpec
from ..runtime.records import MANIFEST_FORMAT, Manifest, dumps
from ..triton.layout import MANIFEST
from ..triton.targets import Targets
from ..version import __version__
from .files import emit_ensemble, emit_model, emit_network
from .fused import emit_fused
from .included import emit_included
from .payloads import Payloads, build_environment

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
) -> dict[str, bytes]:
    """Every file of the repository, including the root manifest of their hashes.

    ``targets`` (every NGC container from 23.10 unless ``--target-triton`` names one) decides what
    the shipped sources and imports are checked against; it is recorded in every ``model.json``
    and in the manifest.
    """
    files: dict[str, bytes] = {}
    payloads = Payloads.create(targets, roots, packager)
    total = len(spec.models) + len(spec.ensembles) + len(spec.networks) + len(spec.included)
    for done, model in enumerate(spec.models, start=1):
        files.update(emit_model(model, payloads))
        if progress is not None:
            progress(done, total, model.name)
    for done, ensemble in enumerate(spec.ensembles, start=len(spec.models) + 1):
        fused = spec.fused_spec(ensemble.name)
        files.update(emit_fused(fused, payloads) if fused is not None else emit_ensemble(ensemble))
        if progress is not None:
            progress(done, total, ensemble.name)
    for done, network in enumerate(spec.networks, start=len(spec.models) + len(spec.ensembles) + 1):
        files.update(emit_network(network))
        if progress is not None:
            progress(done, total, network.name)
    for done, taken in enumerate(spec.included, start=total - len(spec.included) + 1):
        files.update(emit_included(taken, targets))
        if progress is not None:
            progress(done, total, taken.name)
    files[MANIFEST] = dumps(
        {
            Manifest.BUILD: build_environment(),
            Manifest.FILES: {path: sha256_bytes(data) for path, data in sorted(files.items())},
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
