"""The records repogen writes into a repository: their file names, their keys and their encoding.

``<model>/<version>/model.json`` describes one version's payload (what the runtime checks before
unpickling it); ``repogen.manifest.json`` at the root lists every file's sha256 and the package
trees. The build writes them (``repogen.emit``), the runtime and the readers of a built repository
(``repogen.ondisk``, ``repogen.testing``) read them. They are defined here, on the runtime's side,
because the runtime is vendored into every model and imports nothing of the compiler.
"""

from __future__ import annotations

import json
from typing import Any

METADATA_FILE = "model.json"  # beside each version's payload
MANIFEST_FILE = "repogen.manifest.json"  # at the repository root: a file, so tritonserver ignores it
METADATA_FORMAT = 2  # the model.json this runtime reads
MANIFEST_FORMAT = 1


class Metadata:
    """Keys of ``model.json``."""

    BUILD = "build"  # {"cloudpickle", "numpy", "python"} of the building environment
    CALLS = "calls"  # the models a version calls through BLS
    FORMAT = "format"
    FUSED = "fused"  # the step models a fused ensemble runs in-process
    MODEL = "model"
    PACKAGES = "packages"  # tag -> shipped tree: digest, lock, files, size, bytecode
    PAYLOAD = "payload"  # {"file", "sha256"}
    PORTABLE = "portable"
    PYTHONS = "pythons"
    REPOGEN = "repogen"
    REQUIREMENTS = "requirements"  # module -> "distribution==version"
    SOURCES = "sources"
    STRICT = "strict"
    TARGET = "target"
    VERSION = "version"


class Manifest:
    """Keys of ``repogen.manifest.json``."""

    BUILD = Metadata.BUILD
    FILES = "files"  # repository-relative path -> sha256, package trees excepted
    FORMAT = "format"
    MODELS = "models"
    PACKAGES = "packages"  # repository-relative tree directory -> its record
    REPOGEN = Metadata.REPOGEN


def dumps(data: Any) -> bytes:
    """The one encoding of a record: sorted keys, two-space indent, a final newline (diffs stay small)."""
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")
