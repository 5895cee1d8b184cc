"""The files of an included model directory (``models.include``), checked against the build's targets.

The directory is copied as it is, so what the build can still check is whether every targeted
release knows every field its ``config.pbtxt`` sets (``runtime`` needs 24.01, ...): a release that
does not rejects the whole model at load with only "failed to read text proto".
"""

from __future__ import annotations

from ..errors import BuildError
from ..hashing import Entry, FileCopy
from ..ir.spec import IncludedSpec
from ..runtime.contract import CONFIG_FILE
from ..triton import fields
from ..triton.targets import TARGETS, Targets


def emit_included(spec: IncludedSpec, targets: Targets | None = None) -> dict[str, Entry]:
    containers = (targets or Targets(TARGETS)).containers
    oldest = min(containers, key=lambda release: release.version)
    for field in spec.fields:
        if not fields.supported_by(field, oldest):
            added = fields.introduced_in(field)
            raise BuildError(
                f"model '{spec.name}' (included from {spec.source}): its {CONFIG_FILE} sets "
                f"{field.rsplit('.', 1)[-1]!r} ({field}), introduced in Triton {added}; the targeted NGC {oldest.ngc} "
                f"(tritonserver {oldest.tritonserver}) rejects the whole model. Remove it, or build for newer "
                f"containers only (--triton-release {added} or newer)"
            )
    return {f"{spec.name}/{relative}": FileCopy.of(source) for relative, source in spec.files}
