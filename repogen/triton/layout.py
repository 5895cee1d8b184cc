"""The layout of a model repository: file names and the version-directory rule, in one place.

``<repository>/<model>/config.pbtxt`` and ``<repository>/<model>/<version>/model.py`` are Triton's;
``model.json`` (beside each version's payload) and ``repogen.manifest.json`` (at the root: a file,
so tritonserver ignores it) are repogen's. The emitter writes these names and every reader of a
built repository (``repogen.ondisk``) reads them. The runtime (vendored, importing nothing of
repogen's) spells ``model.json`` itself.
"""

from __future__ import annotations

from ..runtime.records import MANIFEST_FILE, METADATA_FILE

__all__ = ["CONFIG", "MANIFEST", "METADATA", "MODEL_FILE", "is_version_name"]

CONFIG = "config.pbtxt"  # <model>/config.pbtxt
MODEL_FILE = "model.py"  # <model>/<version>/model.py, what the Python backend stub imports by default
METADATA = METADATA_FILE  # beside each version's payload (repogen.runtime.records, the records' home)
MANIFEST = MANIFEST_FILE  # at the repository root


def is_version_name(name: str) -> bool:
    """tritonserver loads version directories ``1``, ``2``, ... and ignores (with a log warning) ``01`` or ``v1``."""
    return name.isascii() and name.isdigit() and name == str(int(name))
