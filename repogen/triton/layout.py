"""The layout of a model repository: file names and the version-directory rule, in one place.

``<repository>/<model>/config.pbtxt`` and ``<repository>/<model>/<version>/model.py`` are Triton's;
``model.json`` (beside each version's payload) and ``repogen.manifest.json`` (at the root: a file,
so tritonserver ignores it) are repogen's. The emitter writes these names and every reader of a
built repository (``repogen.ondisk``) reads them. The runtime (vendored, importing nothing of
repogen's) spells ``model.json`` itself. ``sbom.cdx.json`` (the root) and ``model.sig`` (the root and each
model directory) are files too, which tritonserver ignores.
"""

from __future__ import annotations

from ..runtime.records import MANIFEST_FILE, METADATA_FILE

__all__ = ["CONFIG", "MANIFEST", "METADATA", "MODEL_FILE", "SBOM_FILE", "SIGNATURE_FILE", "is_version_name"]

CONFIG = "config.pbtxt"  # <model>/config.pbtxt
MODEL_FILE = "model.py"  # <model>/<version>/model.py, what the Python backend stub imports by default
METADATA = METADATA_FILE  # beside each version's payload (repogen.runtime.records, the records' home)
MANIFEST = MANIFEST_FILE  # at the repository root
SBOM_FILE = "sbom.cdx.json"  # at the root: the CycloneDX SBOM of what the repository ships (repogen.sbom)
SIGNATURE_FILE = "model.sig"  # OpenSSF Model Signing's default name, at the root and in each model directory


def is_version_name(name: str) -> bool:
    """tritonserver loads version directories ``1``, ``2``, ... and ignores (with a log warning) ``01`` or ``v1``."""
    return name.isascii() and name.isdigit() and name == str(int(name))
