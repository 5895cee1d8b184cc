"""A KServe ``InferenceService`` (``serving.kserve.io/v1beta1``) on the Triton runtime.

Two shapes, as KServe documents them. With a storage URI, the stock ``kserve-tritonserver``
runtime is selected by ``modelFormat: triton`` and ``runtimeVersion`` picks the NGC image tag;
KServe's storage initializer downloads the repository to ``/mnt/models``. With an image (the
one ``repogen deploy --docker`` builds, repository baked in at ``/models``), a custom predictor
container runs tritonserver on KServe's port 8080. Both mount a sized memory ``/dev/shm``.
"""

from __future__ import annotations

from typing import Any

from ..triton.releases import Release
from .kubernetes import MODEL_REPOSITORY, Resources, shm_mount, shm_volume

__all__ = ["KSERVE_HTTP_PORT", "inference_service"]

KSERVE_HTTP_PORT = 8080
"""The port KServe routes HTTP to in a predictor container."""
KSERVE_GRPC_PORT = 9000


def inference_service(
    name: str,
    target: Release,
    resources: Resources,
    *,
    storage_uri: str | None,
    image: str | None,
) -> dict[str, Any]:
    """``storage_uri`` → stock Triton runtime; ``image`` → custom predictor container (exactly one)."""
    if image:
        predictor: dict[str, Any] = {
            "containers": [
                {
                    "name": "kserve-container",
                    "image": image,
                    "command": ["tritonserver"],
                    "args": [
                        f"--model-repository={MODEL_REPOSITORY}",
                        f"--http-port={KSERVE_HTTP_PORT}",
                        f"--grpc-port={KSERVE_GRPC_PORT}",
                    ],
                    "ports": [{"name": "http1", "containerPort": KSERVE_HTTP_PORT, "protocol": "TCP"}],
                    "resources": resources.as_dict(),
                    "volumeMounts": [shm_mount()],
                }
            ],
        }
    else:
        predictor = {
            "model": {
                "modelFormat": {"name": "triton"},
                "protocolVersion": "v2",
                "runtimeVersion": target.tag,
                "storageUri": storage_uri,
                "resources": resources.as_dict(),
                "volumeMounts": [shm_mount()],
            },
        }
    predictor["volumes"] = [shm_volume(resources)]
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "repogen"}},
        "spec": {"predictor": predictor},
    }
