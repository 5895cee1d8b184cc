"""The repository's file names, and the records repogen writes into it: their keys and their encoding.

``<repository>/<model>/config.pbtxt`` and ``<repository>/<model>/<version>/model.py`` are Triton's;
``<model>/<version>/model.json`` describes one version's payload (what the runtime checks before
unpickling it); ``repogen.manifest.json`` at the root lists every file's sha256 and the package
trees; ``sbom.cdx.json`` (the root) and ``model.sig`` (the root and each model directory) are files
too, which tritonserver ignores. The build writes them (``repogen.emit``, ``repogen.signing``), the
runtime and the readers of a built repository (``repogen.ondisk``, ``repogen.testing``) read them.
They are defined here, on the runtime's side, because the runtime is vendored into every model and
imports nothing of the compiler.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .errors import PayloadError

CONFIG_FILE = "config.pbtxt"  # <model>/config.pbtxt
MODEL_FILE = "model.py"  # <model>/<version>/model.py, what the Python backend stub imports by default
PAYLOAD_FILE = "model.pkl"  # <model>/<version>/model.pkl, the pickled callables
METADATA_FILE = "model.json"  # beside each version's payload
MANIFEST_FILE = "repogen.manifest.json"  # at the repository root: a file, so tritonserver ignores it
SBOM_FILE = "sbom.cdx.json"  # at the root: the CycloneDX SBOM of what the repository ships (repogen.sbom)
SIGNATURE_FILE = "model.sig"  # OpenSSF Model Signing's default name, at the root and in each model directory
METADATA_FORMAT = 2  # the model.json this runtime reads
MANIFEST_FORMAT = 1

NUMPY = "numpy"  # what a callable takes unless ModelConfig(tensors=...) names a framework (model.json's "tensors")
# Where a model's GPU outputs go (ModelConfig(output_memory=...), settled by the build from who reads them):
# host memory, once per batch, for network clients; left on the GPU, as capsules, for a reader there.
HOST, GPU = "host", "gpu"

# python_backend's model parameter: only "no" lets inputs arrive in GPU memory.
POOL_FLAG = "--cuda-memory-pool-byte-size"  # tritonserver's CUDA memory pool per GPU (runtime/transfers.py reads it)
FORCE_CPU_ONLY_INPUT_TENSORS = "FORCE_CPU_ONLY_INPUT_TENSORS"


def inputs_on_cpu(parameters: dict[str, str]) -> bool:
    """Whether every input reaches the stub in CPU memory (the backend's default), so ``as_numpy`` serves.

    ``as_numpy`` is the cheapest way in: the stub has already copied each CPU input into an
    aligned, writable array of its own when it loads the request (``PbTensor``'s constructor), so
    the array costs nothing more, while a DLPack view of the same tensor costs ~7,000 instructions
    per input and points into shared memory at an offset numpy's SIMD loops cannot use.
    """
    return parameters.get(FORCE_CPU_ONLY_INPUT_TENSORS) != "no"


def is_version_name(name: str) -> bool:
    """tritonserver loads version directories ``1``, ``2``, ... and ignores (with a log warning) ``01`` or ``v1``."""
    return name.isascii() and name.isdigit() and name == str(int(name))


class Metadata:
    """Keys of ``model.json``."""

    BUILD = "build"  # {"cloudpickle", "numpy", "python"} of the building environment
    CALLS = "calls"  # the models a version calls through BLS
    CONCURRENCY = "max_concurrency"  # requests an instance of an async callable has in flight at once
    FORMAT = "format"
    FUSED = "fused"  # the step models a fused ensemble runs in-process
    METRICS = "metrics"  # the declarations of the user's metrics the callables hold (runtime/user_metrics.py)
    MODEL = "model"
    PACKAGES = "packages"  # tag -> shipped tree: digest, lock, files, size, bytecode
    OUTPUTS = "outputs"  # "gpu" where a GPU instance's outputs stay on the GPU for their readers (else host memory)
    PAYLOAD = "payload"  # {"file", "sha256"}
    PORTABLE = "portable"
    PYTHONS = "pythons"
    REPOGEN = "repogen"
    REQUIREMENTS = "requirements"  # module -> "distribution==version"
    SOURCES = "sources"
    STRICT = "strict"
    TARGET = "target"
    TENSORS = "tensors"  # the framework whose tensors the callable takes, where not numpy
    VERSION = "version"


class Manifest:
    """Keys of ``repogen.manifest.json``."""

    BUILD = Metadata.BUILD
    FILES = "files"  # repository-relative path -> sha256, package trees excepted
    FORMAT = "format"
    MODELS = "models"
    PACKAGES = "packages"  # repository-relative tree directory -> its record
    REPOGEN = Metadata.REPOGEN
    SERVER = "server"  # the tritonserver options the models depend on (repogen.triton.server_options)


def dumps(data: Any) -> bytes:
    """The one encoding of a record: sorted keys, two-space indent, a final newline (diffs stay small)."""
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def verified_bytes(path: str, expected: str, *, doing: str, recorded: str, missing: str, model: str = "") -> bytes:
    """``path``'s bytes, only if their sha256 is the ``expected`` one a record holds.

    ``doing`` (``unpickle``, ``compile``) and ``recorded`` (where the hash was written) make the refusal
    name the file, both hashes and the fix; ``missing`` is the whole message for a file that is gone.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise PayloadError(missing) from None
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise PayloadError(
            f"{model}refusing to {doing} {path}: sha256 mismatch, expected {expected} ({recorded}), found {found}; "
            "the file was modified or corrupted after `repogen build`: rebuild the repository (or restore the file)"
        )
    return data
