"""A KServe ``InferenceService`` (``serving.kserve.io/v1beta1``) on the Triton runtime.

Two shapes, as KServe documents them. With a storage URI, the stock ``kserve-tritonserver``
runtime is selected by ``modelFormat: triton`` and ``runtimeVersion`` picks the NGC image tag;
KServe's storage initializer downloads the repository to ``/mnt/models``. With an image (the
one ``repogen deploy --docker`` builds, repository baked in at ``/models``), a custom predictor
container runs tritonserver on KServe's ports as that runtime does: ``args`` only (the image's
entrypoint runs), uid 1000, every capability dropped. Both mount a sized memory ``/dev/shm``, ask
KServe to expose Triton's metrics to Prometheus, and may scale between ``minReplicas`` and
``maxReplicas`` on CPU. Checked against KServe's own CRD schema (tests/schemas/).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..ondisk.reader import BuiltRepository
from ..triton.endpoints import METRICS_PATH, METRICS_PORT
from ..triton.releases import Release
from .kubernetes import MODEL_REPOSITORY, Resources, security_context, server_args, shm_mount, shm_volume
from .modelcar import is_oci, wait_for_link
from .verify import ENTRYPOINT, VerifyDeploy

__all__ = ["ARCHIVES", "KSERVE_HTTP_PORT", "inference_service", "stored_sizes", "upload_note"]

KSERVE_HTTP_PORT = 8080
"""The port KServe routes HTTP to in a predictor container."""
KSERVE_GRPC_PORT = 9000
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")
"""A ``storageUri`` ending so is one object the storage initializer downloads and unpacks."""
_TAR_BLOCK, _TAR_RECORD = 512, 10240


def _long_name(name: str) -> int:
    """GNU tar's extra header and blocks for a name longer than its 100-byte field (``././@LongLink``)."""
    size = len(name.encode())
    return 0 if size <= 100 else _TAR_BLOCK + -(-(size + 1) // _TAR_BLOCK) * _TAR_BLOCK


def stored_sizes(repository: Path) -> tuple[int, int]:
    """(bytes copied file by file: every hard link a copy, bytes of ``tar -C repository -cf x.tar .``).

    The tar's size is GNU tar's: a 512-byte header per entry (and a long-name header for names over 100
    bytes), each file's data once in 512-byte blocks (a second link is a header naming the
    first), two end blocks, in 10 KiB records.
    """
    first: dict[tuple[int, int], str] = {}
    every, tar = 0, _TAR_BLOCK  # the header of "./"
    for folder, dirs, files in os.walk(repository):
        dirs.sort()
        relative = os.path.relpath(folder, repository)
        prefix = "./" if relative == "." else f"./{relative}/"
        for name in dirs:
            tar += _TAR_BLOCK + _long_name(f"{prefix}{name}/")
        for name in sorted(files):
            path = f"{prefix}{name}"
            stat = os.lstat(os.path.join(folder, name))
            every += stat.st_size
            tar += _TAR_BLOCK + _long_name(path)
            key = (stat.st_dev, stat.st_ino)
            if key in first:
                tar += _long_name(first[key])
            else:
                first[key] = path
                tar += -(-stat.st_size // _TAR_BLOCK) * _TAR_BLOCK
    tar += 2 * _TAR_BLOCK
    return every, -(-tar // _TAR_RECORD) * _TAR_RECORD


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def upload_note(info: BuiltRepository, storage_uri: str, name: str) -> str:
    """Comment lines for the manifest: how to put the repository where ``storage_uri`` says, and what that stores.

    KServe's storage initializer (every ``storageUri`` but ``pvc://``) writes a directory's objects one by
    one: hard links become copies, modes and symlinks go, and its S3 and Azure downloads skip empty files
    (a repository ships none: the build fills empty sources, and the runtime accepts a missing empty data
    file). One ``.tar`` object is unpacked with its hard links (Python's ``filter="data"``).
    """
    directory = info.path.name
    every, tar = stored_sizes(info.path)
    uri = storage_uri.rstrip("/")
    if uri.startswith("pvc://"):
        archive = f"tar -C {directory} -cf {name}.tar ."
        lines = [f"Upload: copy {directory}/ onto the PersistentVolumeClaim with its links and modes (cp -a, or "
                 f"{archive} and untar it there): {_mb(tar)}. KServe mounts it as it is."]  # fmt: skip
    elif uri.endswith(ARCHIVES):
        archive = f"tar -C {directory} -cf {uri.rsplit('/', 1)[-1]} ."
        lines = [f"Upload: one archive, which KServe's storage initializer unpacks; a .tar keeps the hard links "
                 f"({_mb(tar)}; a .zip drops exec bits): {archive}, then copy it to {uri}."]  # fmt: skip
    else:
        archive = f"tar -C {directory} -cf {uri.rsplit('/', 1)[-1]}.tar ."
        lines = [
            f"Upload: KServe copies {uri} file by file: every hard link becomes a copy ({_mb(every)}), modes and "
            "symlinks go, S3 and Azure skip empty files; the repository loads after such a copy.",
            f"One .tar keeps the links ({_mb(tar)}): {archive}, copy it to {uri}.tar and pass that as --storage-uri.",
        ]
    return "".join(f"# {line}\n" for line in lines)


def _annotations() -> dict[str, str]:
    """KServe's scrape switch plus where Triton serves its metrics (what its Triton runtime declares)."""
    return {
        "serving.kserve.io/enable-prometheus-scraping": "true",
        "prometheus.kserve.io/port": str(METRICS_PORT),
        "prometheus.kserve.io/path": METRICS_PATH,
    }


STORAGE_MOUNT = "/mnt/models"
"""Where KServe's storage initializer puts a storage URI's files (and its runtime serves them from)."""


def _verifying(
    predictor: dict[str, Any], verify: VerifyDeploy, image: str | None, verifier: str | None, modelcar: bool
) -> None:
    if image:
        predictor["initContainers"] = [verify.init_container(image, security_context(), MODEL_REPOSITORY)]
    else:
        assert verifier is not None
        model = predictor["model"]
        predictor["initContainers"] = [verify.tools_init_container(verifier, security_context())]
        model["command"] = verify.wrapped_command(STORAGE_MOUNT, modelcar)
        model["volumeMounts"] = [*model["volumeMounts"], verify.tools_mount(), verify.key_mount()]
        predictor["volumes"].append(verify.tools_volume())
    predictor["volumes"].append(verify.key_volume())


def inference_service(
    name: str,
    target: Release,
    resources: Resources,
    *,
    storage_uri: str | None,
    image: str | None,
    scaling: tuple[int, int, int] | None = None,
    liveness: dict[str, Any] | None = None,
    verify: VerifyDeploy | None = None,
    verifier_image: str | None = None,
    server_extra: list[str] | None = None,
    env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``storage_uri`` → stock Triton runtime; ``image`` → custom predictor container (exactly one).

    ``scaling`` is (min replicas, max replicas, target CPU utilization %); ``liveness`` a probe by
    inference on :data:`KSERVE_HTTP_PORT` (deploy/probe.py), set on the container or the model.
    ``verify`` checks the repository's signatures before tritonserver starts: an init container of ``image``
    for a baked-in repository; for a downloaded one, the model container itself (KServe's storage
    initializer runs after the pod's init containers) with the verifier copied from ``verifier_image``.
    ``server_extra``/``env``: tritonserver's arguments after the repository (the restriction flags, the CUDA
    memory pool's size) and the key from a Secret (deploy/access_secret.py); on the stock runtime KServe appends the
    model's ``args`` to the runtime's and merges ``env`` by name.
    """
    access = {"env": env} if env else {}
    if image:
        predictor = _image_predictor(image, resources, server_extra or [], access)
    else:
        predictor = _runtime_predictor(target, storage_uri, resources, server_extra, access)
    if liveness:
        (predictor["containers"][0] if image else predictor["model"])["livenessProbe"] = liveness
    predictor["volumes"] = [shm_volume(resources)]
    if verify is not None:
        _verifying(predictor, verify, image, verifier_image, is_oci(storage_uri))
    if not image and is_oci(storage_uri):
        wait_for_link(predictor["model"], ENTRYPOINT)
    if scaling:
        minimum, maximum, cpu = scaling
        predictor.update(minReplicas=minimum, maxReplicas=maximum, scaleMetric="cpu", scaleTarget=cpu)
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "repogen"},
            "annotations": _annotations(),
        },
        "spec": {"predictor": predictor},
    }


def _image_predictor(
    image: str, resources: Resources, server_extra: list[str], access: dict[str, Any]
) -> dict[str, Any]:
    """A custom predictor container: ``image``, the repository baked in, its own tritonserver command line."""
    return {
        "containers": [
            {
                "name": "kserve-container",
                "image": image,
                "args": server_args(
                    MODEL_REPOSITORY,
                    f"--http-port={KSERVE_HTTP_PORT}",
                    f"--grpc-port={KSERVE_GRPC_PORT}",
                    *server_extra,
                ),
                **access,
                "ports": [{"name": "http1", "containerPort": KSERVE_HTTP_PORT, "protocol": "TCP"}],
                "resources": resources.as_dict(),
                "securityContext": security_context(),
                "volumeMounts": [shm_mount()],
            }
        ],
    }


def _runtime_predictor(
    target: Release,
    storage_uri: str | None,
    resources: Resources,
    server_extra: list[str] | None,
    access: dict[str, Any],
) -> dict[str, Any]:
    """KServe's stock Triton runtime of ``target``, the repository downloaded from ``storage_uri``."""
    return {
        "model": {
            "modelFormat": {"name": "triton"},
            "protocolVersion": "v2",
            "runtimeVersion": target.tag,
            "storageUri": storage_uri,
            **({"args": server_extra} if server_extra else {}),
            **access,
            "resources": resources.as_dict(),
            "volumeMounts": [shm_mount()],
        },
    }
