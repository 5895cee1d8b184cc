"""What the runtime knows about the backend stub process it runs in, read from its command line.

tritonserver starts one ``triton_python_backend_stub`` per model instance as
``stub <model.py> <shm region> <region bytes> <growth bytes> <server pid> <backend dir> ...``
(the same layout on 2.39, 2.41 and 2.51). Two faults need it:

* ``PyTritonUnrecoverableError``: PyTriton shuts the whole server down so that its supervisor
  (Kubernetes, Docker) restarts it. A stub can do the same by sending SIGTERM to its server, which
  then drains in-flight requests and exits; the pid comes from this command line and is checked
  against ``/proc`` before any signal is sent (runtime/unrecoverable.py, carried where a model's code
  names the error).
* Shared memory: every request's inputs and outputs pass through the instance's region in
  ``/dev/shm``. Triton's own errors name only the region's key, so the runtime logs which model owns
  which key, and warns when ``/dev/shm`` is too small for large tensors.

Its command line's layout is the contract's (runtime/contract/: :class:`Stub`, :func:`current`), which the
server tools read too. Outside a stub (``repogen.local``, tests) :func:`current` returns None and nothing is
signalled. Inside one whose command line is laid out otherwise, ``runtime.internals`` warns when the model loads.
"""

from __future__ import annotations

import os

from .contract import SHM_DIR, STUB_NAME, Stub

# Below this much free /dev/shm an instance warns: 4 MB requests at concurrency 16 grew one
# instance's region to 76-106 MiB (docs/deployment.md, "Shared memory"); Docker's default is 64 MB.
LOW_SHM_BYTES = 64 * 1024 * 1024
SHM_ADVICE = (
    "raise the server's /dev/shm: `docker run --shm-size=...`, on Kubernetes the sizeLimit of the memory-backed "
    "emptyDir mounted at /dev/shm (`repogen deploy --shm-size`)"
)


def mib(n: float) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def shm_report(model: str, instance: str, stub: Stub) -> tuple[str, bool]:
    """One log line naming the model that owns the region, and whether free /dev/shm is low."""
    try:
        fs = os.statvfs(SHM_DIR)
    except OSError:
        return f"model '{model}' instance '{instance}': shared memory region '{stub.region}'", False
    total, free = fs.f_blocks * fs.f_frsize, fs.f_bavail * fs.f_frsize
    line = (
        f"model '{model}' instance '{instance}' exchanges tensors through shared memory region '{stub.region}' "
        f"({stub.region_path}: {mib(stub.region_bytes)}, growing by {mib(stub.growth_bytes)} as requests need; "
        f"{SHM_DIR} has {mib(free)} free of {mib(total)})"
    )
    if free >= LOW_SHM_BYTES:
        return line, False
    return (
        f'{line}. That is little: a request whose inputs and outputs do not fit fails with "Failed to increase '
        f"the shared memory pool size for key '{stub.region}'\" (4 MB requests at concurrency 16 needed about "
        f"100 MiB per instance); {SHM_ADVICE}"
    ), True


# pybind11 reads numpy's structs as laid out when it was built; from 2.12 on (python_backend r24.11, NGC 24.11)
# it knows numpy 2's and then names its core module "numpy._core". The stub of NGC 23.10-24.10 (pybind11 2.10)
# misreads a numpy 2 array's item size, so every numpy output then fails in the server with "output tensor
# shape does not match size of output" (measured on 2.51 with numpy 2.2.6), DLPack outputs excepted.
NUMPY2_AWARE = b"numpy._core"


def numpy_problem(model: str, numpy_version: str, exe: str = "/proc/self/exe") -> str | None:
    """Why this stub cannot send numpy ``numpy_version``'s arrays, or None; read off the stub's own binary."""
    if not numpy_version.split(".")[0].isdigit() or int(numpy_version.split(".")[0]) < 2:
        return None
    try:
        path = os.path.realpath(exe)
        if os.path.basename(path) != STUB_NAME:
            return None  # not inside a backend stub (repogen.local, tests)
        with open(path, "rb") as binary:
            if NUMPY2_AWARE in binary.read():
                return None
    except OSError:
        return None
    return (
        f"model '{model}' cannot serve with numpy {numpy_version} in the server's Python: this tritonserver's Python "
        f"backend stub ({path}) is built for numpy 1 (as NGC 23.10-24.10's are), so every numpy output would fail "
        "with 'output tensor shape does not match size of output'. Give the server's Python numpy 1 (NGC's "
        "containers pin numpy<2: `pip install 'numpy<2'`), or serve on NGC 24.11 or later"
    )
