"""A repository as an OCI image in a cluster: KServe's modelcar (``storageUri: oci://``) and Kubernetes image volumes.

Every form names the image by digest (what ``repogen push`` prints): a tag can be moved, and a node caches an
image by what the reference resolves to, so only a digest says which repository a pod serves.

KServe (``pkg/webhook/admission/pod/storage_initializer_injector.go`` and its utils): for ``oci://`` it appends a
``modelcar`` container running the image with ``sh -c "ln -sf /proc/$$/root/models /mnt/models && sleep
infinity"``, pre-pulls the image in an init container, shares the pod's PID namespace, mounts an emptyDir on
``/mnt`` in both containers and, with ``uidModelcar`` set, runs both as that uid (a process may follow another's
``/proc/PID/root`` only as the same user). Containers start in order and the modelcar comes after the server, so
``/mnt/models`` may not exist yet when tritonserver starts, which then exits ("failed to stat"); the server's
command therefore waits for the link first, then runs the runtime's own command line.

Kubernetes' ``volumes[].image`` mounts an image read-only (beta from 1.33, with ``subPath`` into it): the stock
NGC image serves ``/models``, the model image's ``/models`` mounted there.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import DeployError
from .oci_image import MODELS_DIR

__all__ = [
    "OCI_PREFIX",
    "image_volume",
    "image_volume_mount",
    "image_volume_note",
    "is_oci",
    "mount_models_image",
    "pinned_reference",
    "push_note",
    "wait_for_link",
]

OCI_PREFIX = "oci://"
_PINNED = re.compile(r"^[^\s@]+/[^\s@]+@sha256:[0-9a-f]{64}$")
MODELS_VOLUME = "models-image"
WAIT_SCRIPT = "until [ -e /mnt/models/ ]; do sleep 0.2; done"
"""The modelcar links /mnt/models after the server container has started: wait for it (milliseconds)."""


def is_oci(uri: str | None) -> bool:
    return bool(uri) and str(uri).startswith(OCI_PREFIX)


def pinned_reference(reference: str, option: str) -> str:
    """``reference`` (``REGISTRY/NAME[:TAG]@sha256:...``), refused without its digest."""
    plain = reference.removeprefix(OCI_PREFIX)
    if not _PINNED.match(plain):
        raise DeployError(
            f"{option} {reference} is not pinned by digest; expected REGISTRY/NAME:TAG@sha256:<64 hex>, the line "
            "`repogen push REPOSITORY REGISTRY/NAME:TAG` prints (a tag can be moved; a digest names one repository)"
        )
    return plain


def wait_for_link(model: dict[str, Any], entrypoint: str) -> None:
    """Put the wait for ``/mnt/models`` in front of the model container's command (or of the runtime's args)."""
    command = model.get("command")
    if command:  # the verifier's wrapper: sh -c SCRIPT, then the runtime's args
        model["command"] = [*command[:-1], f"{WAIT_SCRIPT}; {command[-1]}"]
    else:
        model["command"] = [entrypoint, "/bin/sh", "-c", f'{WAIT_SCRIPT}; exec "$0" "$@"']


def image_volume(reference: str) -> dict[str, Any]:
    return {"name": MODELS_VOLUME, "image": {"reference": reference, "pullPolicy": "IfNotPresent"}}


def image_volume_mount(mount_path: str) -> dict[str, Any]:
    return {"name": MODELS_VOLUME, "mountPath": mount_path, "subPath": MODELS_DIR, "readOnly": True}


def mount_models_image(deployment: dict[str, Any], reference: str, mount_path: str) -> None:
    """The Deployment's server reads ``mount_path`` from the image volume of ``reference``."""
    pod = deployment["spec"]["template"]["spec"]
    pod["volumes"].append(image_volume(reference))
    pod["containers"][0]["volumeMounts"].append(image_volume_mount(mount_path))


def push_note(directory: str, reference: str) -> str:
    """Comment lines: how the image got there, and what the cluster must allow."""
    lines = [
        f"Push: repogen push {directory} {reference.split('@')[0]} (prints the digest pinned here; the same "
        "repository always gives the same digest).",
        "KServe: modelcars must be on (inferenceservice-config, storageInitializer: enableModelcar: true); with "
        "uidModelcar (1010 in KServe's Helm values) the server runs as that uid, which tritonserver needs no "
        "passwd entry for.",
    ]
    return "".join(f"# {line}\n" for line in lines)


def image_volume_note(reference: str) -> str:
    lines = [
        f"The repository is the image {reference} mounted read-only at /models (volumes[].image with subPath): "
        "Kubernetes >= 1.33 with the ImageVolume feature gate on, and a container runtime that supports image volumes.",
    ]
    return "".join(f"# {line}\n" for line in lines)
