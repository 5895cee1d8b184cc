"""Kubernetes manifests (a Deployment, its Service, optionally an autoscaler) serving a repository's image.

Built as plain dicts, printed as YAML by :func:`repogen.deploy.files.dump_yaml`; tests compare the
parsed YAML against these dicts, and check them with kubernetes-validate. Written as NVIDIA and
KServe write theirs: the container passes ``args`` only, so the image's entrypoint (NVIDIA's banner,
driver and shm checks) still runs; it runs as uid 1000 (``triton-server`` in every NGC image) with
every capability dropped, like KServe's Triton runtime; the pod carries the Prometheus scrape
annotations for Triton's metrics port. Probes use Triton's own health endpoints: ``/v2/health/ready``
turns true only once every model loaded (a startup probe on it keeps liveness from killing a pod
whose models are still loading), ``/v2/health/live`` while the server process responds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import DeployError, UsageError
from ..ondisk.reader import BuiltRepository
from ..triton.endpoints import DEFAULT_PORTS, HEALTH_LIVE, HEALTH_READY, HTTP_PORT, METRICS_PATH, METRICS_PORT
from ..triton.shm import shm_size_bytes
from .probe import LOADED_NODE_S
from .resources import GiB, MiB, format_quantity, parse_quantity
from .verify import VerifyDeploy

__all__ = [
    "HTTP_PORT",
    "PORTS",
    "Resources",
    "autoscaler",
    "deployment",
    "dns_name",
    "labels",
    "resolve_resources",
    "prometheus_annotations",
    "security_context",
    "service",
    "shm_volume",
]

PORTS = tuple(DEFAULT_PORTS.items())
SHM_VOLUME = "dshm"
MODEL_REPOSITORY = "/models"
TRITON_UID = 1000
"""``triton-server`` in every NGC tritonserver image (NVIDIA's build asserts uid and gid 1000)."""
_DEFAULT_MEMORY_REQUEST = 2 * GiB
_DEFAULT_MEMORY_LIMIT = 4 * GiB
_WORKING_MEMORY = 512 * MiB
"""What the server itself needs beside the memory-backed /dev/shm, at the least."""


def dns_name(text: str) -> str:
    """A DNS-1123 label (Kubernetes object names) from a directory name: ``model_repository`` → ``model-repository``."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].rstrip("-")
    if not name:
        raise DeployError(f"cannot derive a Kubernetes name from {text!r}; pass --name NAME (lowercase, digits, '-').")
    return name


@dataclass(frozen=True)
class Resources:
    """Resolved container resources; memory values are Kubernetes quantities."""

    cpu_request: str
    cpu_limit: str
    memory_request: str
    memory_limit: str
    shm_size: str
    gpus: int

    def as_dict(self) -> dict[str, Any]:
        limits: dict[str, Any] = {"cpu": self.cpu_limit, "memory": self.memory_limit}
        if self.gpus:
            limits["nvidia.com/gpu"] = self.gpus
        return {"requests": {"cpu": self.cpu_request, "memory": self.memory_request}, "limits": limits}


def resolve_resources(
    info: BuiltRepository,
    *,
    cpu_request: str = "1",
    cpu_limit: str = "2",
    memory_request: str | None = None,
    memory_limit: str | None = None,
    shm_size: str | None = None,
    gpus: int | None = None,
) -> Resources:
    """Fill defaults: /dev/shm from the instance count, a memory limit that holds it, a GPU if a model asks.

    A memory-backed ``emptyDir`` counts against the container's memory limit, so the limit
    must exceed the /dev/shm size with room for the server itself.
    """
    gpu_count = gpus if gpus is not None else (1 if info.uses_gpu else 0)
    shm = (
        parse_quantity(shm_size, "--shm-size") if shm_size else shm_size_bytes(info.python_instances(max(gpu_count, 1)))
    )
    needed = shm + _WORKING_MEMORY
    if memory_limit:
        limit = parse_quantity(memory_limit, "--memory-limit")
        if limit < needed:
            raise UsageError(
                f"--memory-limit {memory_limit} cannot hold /dev/shm ({format_quantity(shm)}, memory-backed, counted "
                f"against the limit) plus the server; expected at least {format_quantity(needed)}. Raise "
                "--memory-limit or lower --shm-size."
            )
    else:
        limit = max(_DEFAULT_MEMORY_LIMIT, -(-(shm + 2 * GiB) // GiB) * GiB)
    request = (
        parse_quantity(memory_request, "--memory-request") if memory_request else min(_DEFAULT_MEMORY_REQUEST, limit)
    )
    if request > limit:
        raise UsageError(
            f"--memory-request {format_quantity(request)} exceeds the memory limit {format_quantity(limit)}; "
            "Kubernetes rejects that. Lower --memory-request or raise --memory-limit."
        )
    return Resources(
        cpu_request=cpu_request,
        cpu_limit=cpu_limit,
        memory_request=memory_request or format_quantity(request),
        memory_limit=memory_limit or format_quantity(limit),
        shm_size=format_quantity(shm),
        gpus=gpu_count,
    )


def shm_volume(resources: Resources) -> dict[str, Any]:
    return {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": resources.shm_size}}


def shm_mount() -> dict[str, Any]:
    return {"name": SHM_VOLUME, "mountPath": "/dev/shm"}


def _probe(path: str, period: int, failures: int, check: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``httpGet`` of ``path``, or ``check`` (an ``exec`` sending the access key: deploy/probe.py). Its timeout is
    explicit: Kubernetes' default (1 s) fails a healthy server's probes on a loaded node."""
    how = {"exec": check} if check else {"httpGet": {"path": path, "port": HTTP_PORT}}
    return {**how, "periodSeconds": period, "timeoutSeconds": LOADED_NODE_S, "failureThreshold": failures}


def labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "repogen"}


def security_context() -> dict[str, Any]:
    """KServe's Triton runtime's: uid 1000, no privilege escalation, every capability dropped."""
    return {
        "runAsUser": TRITON_UID,
        "runAsGroup": TRITON_UID,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
    }


def prometheus_annotations() -> dict[str, str]:
    """The ``prometheus.io/*`` annotations Prometheus' kubernetes-pods scrape job reads: Triton's /metrics."""
    return {"prometheus.io/scrape": "true", "prometheus.io/port": str(METRICS_PORT), "prometheus.io/path": METRICS_PATH}


def server_args(model_repository: str = MODEL_REPOSITORY, *extra: str) -> list[str]:
    """The container's ``args``: the command too, as KServe's runtime writes it, so the image's entrypoint runs."""
    return ["tritonserver", f"--model-repository={model_repository}", *extra]


def deployment(
    name: str,
    image: str,
    resources: Resources,
    *,
    replicas: int = 1,
    liveness: dict[str, Any] | None = None,
    server_extra: list[str] | None = None,
    env: list[dict[str, Any]] | None = None,
    ready_check: dict[str, Any] | None = None,
    verify: VerifyDeploy | None = None,
) -> dict[str, Any]:
    """``liveness``: the probe by inference (deploy/probe.py); without one, Triton's /v2/health/live.

    ``server_extra``: tritonserver's arguments after the repository (the restriction flags, deploy/access_secret.py;
    the CUDA memory pool's size, deploy/resources.py); ``env``: the access key they read from a Secret;
    ``ready_check``: the startup/readiness ``exec`` where health needs the key. ``verify`` adds an init
    container that checks ``/models`` against its signatures before the server starts.
    """
    container = {
        "name": "tritonserver",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": server_args(MODEL_REPOSITORY, *(server_extra or [])),
        **({"env": env} if env else {}),
        "ports": [{"name": port_name, "containerPort": port} for port_name, port in PORTS],
        "startupProbe": _probe(HEALTH_READY, 5, 120, ready_check),
        "readinessProbe": _probe(HEALTH_READY, 5, 3, ready_check),
        "livenessProbe": liveness or _probe(HEALTH_LIVE, 10, 3, ready_check),
        "resources": resources.as_dict(),
        "securityContext": security_context(),
        "volumeMounts": [shm_mount()],
    }
    pod: dict[str, Any] = {"containers": [container], "volumes": [shm_volume(resources)]}
    if verify is not None:
        pod = {
            "initContainers": [verify.init_container(image, security_context())],
            **pod,
            "volumes": [shm_volume(resources), verify.key_volume()],
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels(name)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": labels(name), "annotations": prometheus_annotations()},
                "spec": pod,
            },
        },
    }


def autoscaler(name: str, *, min_replicas: int, max_replicas: int, cpu_utilization: int) -> dict[str, Any]:
    """An ``autoscaling/v2`` HorizontalPodAutoscaler on the Deployment's CPU use (its requests set the 100%)."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "labels": labels(name)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": cpu_utilization},
                    },
                }
            ],
        },
    }


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels(name)},
        "spec": {
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": port_name, "port": port, "targetPort": port_name} for port_name, port in PORTS],
        },
    }
