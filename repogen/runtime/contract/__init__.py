"""The contract between the build and the runtime: every name, record and rule both sides must agree on.

The build (``repogen.emit``, ``repogen.ir``, ``repogen.signing``), the readers of a built repository
(``repogen.ondisk``, ``repogen.testing``) and the tools that start servers (``repogen.triton``,
``repogen.server``) read them from here; the runtime, vendored into every model, reads them too and
imports nothing of the compiler, so their home is on the runtime's side: this package. Outside
``repogen.runtime`` nothing else of the runtime is imported but this package (its two parts below too) and
the entry points a payload or a generated ``model.py`` names (pyproject.toml's import-linter contract
"Outside the runtime ...").

* The repository's files: ``<repository>/<model>/config.pbtxt`` and ``<model>/<version>/model.py``
  are Triton's; ``<model>/<version>/model.json`` describes one version's payload (what the runtime
  checks before unpickling it); ``repogen.manifest.json`` at the root lists every file's sha256 and
  the package trees; ``sbom.cdx.json`` (the root) and ``model.sig`` (the root and each model
  directory) are files too, which tritonserver ignores. Their keys, their encoding.
* The words in them: where tensors live (``NUMPY``, ``HOST``, ``GPU``, python_backend's
  ``FORCE_CPU_ONLY_INPUT_TENSORS``), Triton's data types; a fused ensemble's step directories; an
  exported network's file.
* python_backend's stub command line, which the runtime reads for itself and the server tools for the
  stubs they find.
* Two parts are modules of their own in this package, because few models carry them (emit/vendoring.py carries
  this ``__init__`` with every model, a part only with the models that import it): the shipped package trees'
  directory, tags and digest (``contract.package_trees``) and the tritonserver flags a model depends on
  (``contract.tritonserver_flags``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
from typing import Any, NamedTuple

import numpy as np

from ..errors import PayloadError

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
# Where a model's GPU outputs go: ModelConfig(output_memory=...), settled by the build from who reads them, model.json's
# "output_memory", the runtime's output_memory (one name from the DSL to runtime/transfers.py):
# host memory, once per batch, for network clients; left on the GPU, as capsules, for a reader there.
HOST, GPU = "host", "gpu"

# python_backend's model parameter: only "no" lets inputs arrive in GPU memory.
FORCE_CPU_ONLY_INPUT_TENSORS = "FORCE_CPU_ONLY_INPUT_TENSORS"

# The metrics the runtime publishes on the server's endpoint, which `repogen status` reads.
FAILURE_METRIC = "repogen_inference_request_failure"
MISSING_METRIC = "repogen_server_option_missing"

GRAPH_FILE = "model.onnx"  # <version>/model.onnx: an exported network the onnxruntime backend serves
STEPS_DIR = "steps"  # <fused>/<version>/steps/<model>/<version>/: a fused ensemble's step models
DEFAULT_MAX_CONCURRENCY = 64
"""Requests one instance of an async callable has in flight at once unless ``ModelConfig(max_concurrency=...)``."""


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
    OUTPUT_MEMORY = "output_memory"  # "gpu" where a GPU instance's GPU outputs stay there for their readers (else host)
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


# Triton's data types: the one table the compiler (repogen.triton.dtypes derives every direction it needs) and
# the runtime both read. Each has Triton's enum name (TYPE_FP32, the config's), its wire name (FP32, the
# HTTP/gRPC protocol's), its numpy dtype (None for TYPE_BF16: numpy has no bfloat16, so such tensors travel
# through DLPack only) and its element name, the name torch, cupy, jax and the array API give the same type
# (float32, bfloat16), by which a framework's tensor is checked against a declaration.


class DataType(NamedTuple):
    enum: str
    wire: str
    numpy: np.dtype[Any] | None
    element: str


STRING = "TYPE_STRING"
BF16 = "TYPE_BF16"

TABLE = (
    DataType("TYPE_BOOL", "BOOL", np.dtype(np.bool_), "bool"),
    DataType("TYPE_UINT8", "UINT8", np.dtype(np.uint8), "uint8"),
    DataType("TYPE_UINT16", "UINT16", np.dtype(np.uint16), "uint16"),
    DataType("TYPE_UINT32", "UINT32", np.dtype(np.uint32), "uint32"),
    DataType("TYPE_UINT64", "UINT64", np.dtype(np.uint64), "uint64"),
    DataType("TYPE_INT8", "INT8", np.dtype(np.int8), "int8"),
    DataType("TYPE_INT16", "INT16", np.dtype(np.int16), "int16"),
    DataType("TYPE_INT32", "INT32", np.dtype(np.int32), "int32"),
    DataType("TYPE_INT64", "INT64", np.dtype(np.int64), "int64"),
    DataType("TYPE_FP16", "FP16", np.dtype(np.float16), "float16"),
    DataType("TYPE_FP32", "FP32", np.dtype(np.float32), "float32"),
    DataType("TYPE_FP64", "FP64", np.dtype(np.float64), "float64"),
    DataType(BF16, "BF16", None, "bfloat16"),
    DataType(STRING, "BYTES", np.dtype(object), "bytes"),
)

BY_ENUM = {t.enum: t for t in TABLE}
NUMPY_DTYPES = {t.enum: t.numpy for t in TABLE if t.numpy is not None}
"""Enum name -> numpy dtype, for every type numpy can hold (all but BF16)."""


def element_name(dtype: Any) -> str:
    """The element name of any framework's dtype object: ``torch.float32``, ``np.dtype('float32')``,
    ``array_api_strict.float32`` and ``jnp.bfloat16`` all name their type last."""
    name = getattr(dtype, "name", None)  # numpy's dtype (cupy's and jax's too): 'float32'
    if not isinstance(name, str):
        name = str(dtype)  # torch.float32, array_api_strict.float32
    return name.rsplit(".", 1)[-1]


def element_bytes(enum: str) -> int | None:
    """Bytes per element of a Triton data type; None for BYTES, whose elements vary."""
    found = BY_ENUM.get(enum)
    if found is None or enum == STRING:
        return None
    return 2 if found.numpy is None else found.numpy.itemsize  # BF16: two bytes, as float16


def read_again(inputs: list[list[tuple[str, str]]], outputs: list[str]) -> list[frozenset[str]]:
    """Per step (its ``(input, ensemble tensor)`` pairs, in order), the tensors it reads that a later
    step or the answer (``outputs``) reads again: the step gets its own copy of those. One rule for
    the runtime and for the fused ``model.py`` emit writes out."""
    read_later = set(outputs)
    shared = []
    for pairs in reversed(inputs):
        shared.append(frozenset(tensor for _, tensor in pairs if tensor in read_later))
        read_later.update(tensor for _, tensor in pairs)
    return shared[::-1]


# python_backend's stub: ``stub <model.py> <shm region> <region bytes> <growth bytes> <server pid> <backend dir>
# ...`` (the same layout on 2.39, 2.41 and 2.51); runtime/stub.py reads its own, repogen.server and
# repogen.testing the stubs of servers they started.
SHM_DIR = "/dev/shm"
SERVER_NAME = "tritonserver"
STUB_NAME = "triton_python_backend_stub"


@dataclasses.dataclass(frozen=True)
class Stub:
    """The stub's shared-memory region and the pid of the tritonserver that started it."""

    region: str
    region_bytes: int
    growth_bytes: int
    server_pid: int

    @property
    def region_path(self) -> str:
        return os.path.join(SHM_DIR, self.region)

    def server_alive(self) -> bool:
        """Whether ``server_pid`` is a running tritonserver (never signal a pid that was reused)."""
        try:
            with open(f"/proc/{self.server_pid}/comm", encoding="utf-8") as fh:
                return fh.read().strip() == SERVER_NAME
        except OSError:
            return False

    def stop_server(self) -> bool:
        """SIGTERM the server: it stops taking requests, drains those in flight, unloads, exits."""
        if not self.server_alive():
            return False
        try:
            os.kill(self.server_pid, signal.SIGTERM)
        except OSError:
            return False
        return True


def current(cmdline: str = "/proc/self/cmdline") -> Stub | None:
    """This process's stub arguments, or None where this is not a backend stub."""
    return parse(read_argv(cmdline))


def read_argv(cmdline: str = "/proc/self/cmdline") -> list[str] | None:
    """A process's command line, None where it cannot be read."""
    try:
        with open(cmdline, "rb") as fh:
            return fh.read().decode("utf-8", "replace").rstrip("\0").split("\0")
    except OSError:
        return None


def parse(argv: list[str] | None) -> Stub | None:
    """The stub's arguments from its command line, None where it is not laid out as python_backend r23.10+ lays it."""
    if argv is None or len(argv) < 6 or not argv[0].endswith(STUB_NAME):
        return None
    region, sizes = argv[2], argv[3:6]
    if not region or "/" in region or not all(s.isdigit() for s in sizes):
        return None
    return Stub(region, int(sizes[0]), int(sizes[1]), int(sizes[2]))
