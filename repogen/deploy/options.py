"""What ``repogen deploy`` is asked for: every target's options, in one frozen record the CLI and the library fill."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..deprecated import renamed_fields
from ..packages.indexes import PackageIndexes
from ..triton.releases import NEWEST, Release
from ..triton.restricted_apis import DEFAULT_RESTRICTED


@renamed_fields(triton_version="triton_release")
@dataclass(frozen=True)
class DeployOptions:
    docker: bool = False
    k8s: bool = False
    kserve: bool = False
    compose: bool = False
    triton_release: str | Release = NEWEST.ngc
    """Any spelling of a release (``26.11``, ``2.75.0``, ...); by default the newest in the table."""
    prebuilt: bool = False
    """Docker: copy the repository as built, the default without ``app`` (kept for the ``--prebuilt`` flag).
    Compose: run the image of that Dockerfile (written too) instead of mounting the repository."""
    app: str | None = None
    """Docker: rebuild the repository inside the image from this ``APP:ATTR`` instead of copying it."""
    context: Path = field(default_factory=Path)
    output_dir: Path | None = None
    """Where the files will be written; the Dockerfile's `docker build -f` hint points there."""
    name: str | None = None
    image: str | None = None
    replicas: int = 1
    max_replicas: int | None = None
    """Scale between ``replicas`` and this on CPU (a HorizontalPodAutoscaler; KServe's min/maxReplicas)."""
    target_cpu_utilization: int = 80
    cpu_request: str = "1"
    cpu_limit: str = "2"
    memory_request: str | None = None
    memory_limit: str | None = None
    shm_size: str | None = None
    gpus: int | None = None
    storage_uri: str | None = None
    indexes: PackageIndexes = field(default_factory=PackageIndexes)
    """Docker: where the image's ``pip install`` finds what the repository does not ship (``--index-url``,
    ``--extra-index-url``, ``--find-links``); by default PyPI, plus PyTorch's index for its variant builds."""
    verify_key: Path | None = None
    """Verify the repository's signatures against this public key before serving (``repogen.deploy.verify``)."""
    verify_key_secret: str | None = None
    """Kubernetes/KServe: the key from this Secret (its ``key.pub``) instead of a ConfigMap of ``verify_key``."""
    verifier_image: str | None = None
    """KServe with a storage URI: the image the verifier is copied from (default: ``image``, or ``<name>:latest``)."""
    restrict: tuple[str, ...] = DEFAULT_RESTRICTED
    """The API groups only a request carrying the access key reaches (PyTriton 0.7's set); ``()``: none."""
    access_secret: str | None = None
    """Kubernetes/KServe: the Secret holding the key (default ``<name>-access-token``)."""
    trace_endpoint: str | None = None
    """Trace with OpenTelemetry, exported over OTLP/HTTP to this URL (every file's tritonserver); None: off."""
    trace_rate: int | None = None
    """With ``trace_endpoint``: one request of every this many (default tritonserver's, 1000)."""
    models_image: str | None = None
    """Kubernetes: serve the stock image with this model image (``repogen push``'s reference@digest) mounted as an
    image volume on /models, instead of an image with the repository baked in."""
