"""``repogen deploy``'s library entry point: a built repository → deployment files by name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..deprecated import renamed_fields
from ..emit.templates import render
from ..errors import DeployError, UsageError
from ..ondisk import compatibility
from ..ondisk.reader import BuiltRepository, read_repository
from ..packages.indexes import PackageIndexes
from ..triton.releases import NEWEST, Release, get_release
from ..triton.restricted_apis import DEFAULT_RESTRICTED
from ..triton.server_options import DEFAULT_TRACE_RATE, trace_args
from ..triton.shm import SHM_PER_INSTANCE
from ..version import __version__
from . import access_secret, compose, dockerfile, kserve, kubernetes, modelcar, probe
from .build_context import context_path
from .resources import docker_gpus, format_quantity
from .verify import VERIFY_KEY_FILE, KeySource, VerifyDeploy, deploy_verification, verify_key_in_context, verify_note
from .wheel import wheel_bytes, wheel_name

__all__ = ["COMPOSE_FILE", "DOCKERFILE", "DeployOptions", "DeployOutput", "KSERVE_FILE", "K8S_FILE", "generate"]

DOCKERFILE = "Dockerfile"
DOCKERIGNORE = "Dockerfile.dockerignore"
K8S_FILE = "kubernetes.yaml"
KSERVE_FILE = "inferenceservice.yaml"
COMPOSE_FILE = "compose.yaml"
"""Beside the Dockerfile: the public key its verify stage copies (the key of ``--verify-key``)."""


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


@dataclass(frozen=True)
class DeployOutput:
    files: dict[str, str]
    """File name → content, in the order they should be printed."""
    warnings: tuple[str, ...]
    binaries: dict[str, bytes] = field(default_factory=dict)
    """Written beside the files, never printed: repogen's own wheel, which an ``--app`` build stage installs."""

    def printed(self) -> str:
        """The files as ``repogen deploy`` prints them without ``-o``: a ``# ---- NAME`` line before each when there
        are several, and ``---`` between YAML files so that ``| kubectl apply -f -`` sees every document."""
        shown = {name: text for name, text in self.files.items() if not name.endswith(".dockerignore")}
        parts = []
        for index, (name, text) in enumerate(shown.items()):
            if index and name.endswith(".yaml"):
                parts.append("---\n")
            if len(shown) > 1:
                parts.append(f"# ---- {name}\n")
            parts.append(text)
        return "".join(parts)

    def write(self, directory: Path) -> Iterator[str]:
        """Write every file (and binary) into ``directory``, saying so in a line after each."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in self.files.items():
            (directory / name).write_text(text, encoding="utf-8")
            yield f"Wrote {directory / name}"
        for name, data in self.binaries.items():
            (directory / name).write_bytes(data)
            yield f"Wrote {directory / name} (repogen itself, which the image's build stage installs)"


def dump_yaml(*documents: dict[str, Any]) -> str:
    """Kubernetes documents as block-style YAML, keys in insertion order, separated by ``---``: deterministic."""
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16)


def _header(info: BuiltRepository, command: str, resources: kubernetes.Resources, gpus: int, access_note: str) -> str:
    return render(
        "deploy/manifest_header.tmpl",
        repogen_version=__version__,
        command=command,
        models=", ".join(m.name for m in info.models),
        shm_size=resources.shm_size,
        python_instances=info.python_instances(max(gpus, 1)),
        shm_per_instance=format_quantity(SHM_PER_INSTANCE),
        access_note=access_note,
    ).decode()


def _compose_header(info: BuiltRepository, target: Release, builds: bool, apis: tuple[str, ...]) -> str:
    served = "the image built from the Dockerfile beside it" if builds else f"{target.image}, {info.path.name} mounted"
    run = f"{access_secret.ENV}=KEY " if apis else ""
    return (
        f"# Generated by repogen {__version__}: repogen deploy --compose\n"
        f"# Repository: {', '.join(m.name for m in info.models)}; served by {served}.\n"
        f"{access_secret.docker_note(apis)}\n"
        f"#   {run}docker compose up -d     (or docker-compose up -d); docker compose down stops and removes it\n"
        "# TRITON_IMAGE=... changes the image, TRITON_ADDRESS=0.0.0.0 publishes the ports beyond this machine,\n"
        "# TRITON_HTTP_PORT / TRITON_GRPC_PORT / TRITON_METRICS_PORT change the host ports.\n"
    )


def _check_fit(info: BuiltRepository, target: Release, fix: str) -> list[str]:
    """What stops ``target`` loading the repository as built is an error (nothing is written); what may, a warning."""
    found = compatibility.fit(info, target)
    if found.errors:
        raise DeployError(" ".join(f"{error}." for error in found.errors) + f" {fix}. Nothing was written.")
    return found.warnings


def _check_stock_runtime(
    info: BuiltRepository,
    target: Release,
    where: str = "KServe's stock Triton runtime",
    fix: str = "Build an image with `repogen deploy --docker` and pass it as --image",
) -> list[str]:
    """A repository copied as is onto a stock image must need no packages and load on its container.

    What cannot load is an error, nothing is written; what may not load (a build checked for another
    container's Python only) is a warning.
    """
    if info.requirements:
        raise DeployError(
            f"{info.path}: the models import {', '.join(info.requirements)}, which {where} "
            f"({target.image}) lacks and the repository does not ship, so they would fail to load there; nothing "
            f"was written. Rebuild without --packages record (or --provided for them) so that they ship inside the "
            f"repository, or: {fix}."
        )
    return _check_fit(info, target, f"Or: {fix[0].lower()}{fix[1:]}")


def _scaling(options: DeployOptions) -> tuple[int, int, int] | None:
    if options.max_replicas is None:
        return None
    if options.max_replicas < options.replicas:
        raise UsageError(
            f"--max-replicas {options.max_replicas} is below --replicas {options.replicas} (the minimum the "
            "autoscaler keeps); expected at least that. Raise --max-replicas or lower --replicas."
        )
    if not 1 <= options.target_cpu_utilization <= 100:
        raise UsageError(
            f"--target-cpu-utilization {options.target_cpu_utilization} is not a percentage of the CPU request; "
            "expected 1 to 100."
        )
    return options.replicas, options.max_replicas, options.target_cpu_utilization


@dataclass(frozen=True)
class _Target:
    """What every file is written for: the repository, the release serving it, its names, key and access."""

    info: BuiltRepository
    release: Release
    apis: tuple[str, ...]
    name: str
    secret: str
    image: str
    verify: VerifyDeploy | None
    server: tuple[str, ...] = ()
    """tritonserver's arguments every file starts it with: the options the models depend on, then tracing."""


@dataclass
class _Written:
    files: dict[str, str] = field(default_factory=dict)
    binaries: dict[str, bytes] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def generate(repository: str | Path, options: DeployOptions) -> DeployOutput:
    """Every requested deployment file for ``repository`` (nothing is written here)."""
    if not (options.docker or options.k8s or options.kserve or options.compose):
        raise UsageError("nothing to generate; expected at least one of --docker, --k8s, --kserve, --compose.")
    target = _target(repository, options)
    written = _Written()
    compose_builds = options.compose and bool(options.docker or options.prebuilt or options.app)
    if options.docker or compose_builds:  # --compose --prebuilt builds the image of the Dockerfile written beside
        _docker(target, options, written)
    if options.compose:
        _compose(target, options, compose_builds, written)
    scaling = _scaling(options)
    if options.k8s or options.kserve:
        resources = kubernetes.resolve_resources(
            target.info,
            cpu_request=options.cpu_request,
            cpu_limit=options.cpu_limit,
            memory_request=options.memory_request,
            memory_limit=options.memory_limit,
            shm_size=options.shm_size,
            gpus=options.gpus,
        )
        if options.k8s:
            _kubernetes(target, options, resources, scaling, written)
        if options.kserve:
            _kserve(target, options, resources, scaling, written)
    return DeployOutput(written.files, tuple(written.warnings), written.binaries)


def _target(repository: str | Path, options: DeployOptions) -> _Target:
    info = read_repository(repository)
    release = get_release(options.triton_release)
    apis = tuple(options.restrict)
    access_secret.check_release(release, apis)
    name = options.name or kubernetes.dns_name(info.path.resolve().name)
    secret = access_secret.secret_name(name, options.access_secret)
    key = KeySource.of(options.verify_key, options.verify_key_secret)
    verify = deploy_verification(info, key, name) if key is not None else None
    server = (*info.server_args(), *_trace(options))
    return _Target(info, release, apis, name, secret, options.image or f"{name}:latest", verify, server)


def _trace(options: DeployOptions) -> list[str]:
    """tritonserver's tracing arguments (``--trace-endpoint``/``--trace-rate``), none by default."""
    if options.trace_endpoint is None:
        if options.trace_rate is not None:
            raise UsageError("--trace-rate samples what --trace-endpoint exports: pass --trace-endpoint URL too.")
        return []
    try:
        return trace_args(options.trace_endpoint, options.trace_rate or DEFAULT_TRACE_RATE)
    except ValueError as exc:
        raise UsageError(f"--trace-endpoint/--trace-rate: {exc}") from None


def _docker(target: _Target, options: DeployOptions, written: _Written) -> None:
    """The Dockerfile and its .dockerignore, the public key its verify stage copies, repogen's wheel for --app."""
    info, out_dir = target.info, options.output_dir
    if options.prebuilt and options.app:
        raise UsageError(
            f"--prebuilt copies {info.path} into the image as built, --app {options.app} rebuilds it inside the "
            "image; expected one of them. Leave --app out to copy the repository (the default)."
        )
    key_in_context = None
    if target.verify is not None:
        key_in_context = verify_key_in_context(target.verify, options.app, options.context, out_dir)
        written.files[VERIFY_KEY_FILE] = target.verify.key.text()
    built = dockerfile.dockerfile(
        info,
        target.release,
        app=options.app or None,
        context=options.context,
        dockerfile_path=(out_dir / DOCKERFILE).as_posix() if out_dir is not None else DOCKERFILE,
        tag=target.image,
        repogen_wheel=_repogen_wheel(options, written) if options.app else None,
        gpus=max(options.gpus or 0, 1),
        run_gpus=docker_gpus(info, options.gpus),
        indexes=options.indexes,
        verify=target.verify,
        key_in_context=key_in_context,
        apis=target.apis,
        server=target.server,
    )
    written.files[DOCKERFILE] = built.dockerfile
    written.files[DOCKERIGNORE] = built.dockerignore
    if not options.app:  # the repository as built goes into the image: it must load there
        fix = "Or pass --app APP:ATTR to rebuild it inside the image, with the image's Python"
        written.warnings.extend(_check_fit(info, target.release, fix))


def _repogen_wheel(options: DeployOptions, written: _Written) -> str:
    """``--app``: repogen's own wheel, written beside the Dockerfile in the build context; its path there."""
    if options.output_dir is None:
        raise UsageError(
            "rebuilding the repository inside the image (--app) installs repogen from a wheel written beside "
            "the Dockerfile, inside the build context; expected -o DIR (under --context). Or leave --app out "
            "to copy the repository built here."
        )
    path = context_path(options.output_dir / wheel_name(), options.context, "the deployment directory")
    written.binaries[wheel_name()] = wheel_bytes()
    return path


def _compose(target: _Target, options: DeployOptions, builds: bool, written: _Written) -> None:
    """compose.yaml: the stock image with the repository mounted, or (``builds``) the Dockerfile's image."""
    info, release = target.info, target.release
    directory = options.output_dir or Path(".")
    build = {"context": str(options.context), "dockerfile": str(directory / DOCKERFILE)} if builds else None
    if build is None:
        fix = "Pass --prebuilt to build an image holding the repository (with --docker's Dockerfile)"
        written.warnings.extend(_check_stock_runtime(info, release, "the stock image", fix))
    document = compose.compose_file(
        info, release, target.name, directory=directory, image=target.image, build=build, apis=target.apis,
        gpus=options.gpus, server=target.server,
    )  # fmt: skip
    written.files[COMPOSE_FILE] = _compose_header(info, release, build is not None, target.apis) + dump_yaml(document)


def _cluster_head(target: _Target, resources: kubernetes.Resources, command: str) -> tuple[list[dict[str, Any]], str]:
    """What a Kubernetes and a KServe file both begin with: the verify key's ConfigMap, and the comment header."""
    verify = target.verify
    found = verify.config_map(kubernetes.labels(target.name)) if verify is not None else None
    config_map = [found] if found else []  # a key from a Secret needs none
    note = access_secret.manifest_note(target.apis, target.secret)
    return config_map, _header(target.info, command, resources, resources.gpus, note) + verify_note(verify)


def _kubernetes(
    target: _Target,
    options: DeployOptions,
    resources: kubernetes.Resources,
    scaling: tuple[int, int, int] | None,
    written: _Written,
) -> None:
    """kubernetes.yaml: a Deployment, its Service and, with scaling, a HorizontalPodAutoscaler."""
    apis = target.apis
    config_map, header = _cluster_head(target, resources, "--k8s")
    models_image = _models_image(target, options)
    deployment = kubernetes.deployment(
        target.name,
        (options.image or target.release.image) if models_image else target.image,
        resources,
        replicas=options.replicas,
        liveness=probe.liveness_probe(target.info, kubernetes.HTTP_PORT, apis),
        server_extra=[*access_secret.kubernetes_args(target.release, apis), *target.server],
        env=access_secret.kubernetes_env(target.secret) if apis else None,
        ready_check=probe.ready_check(kubernetes.HTTP_PORT, apis),
        verify=target.verify,
    )
    if models_image:
        modelcar.mount_models_image(deployment, models_image, kubernetes.MODEL_REPOSITORY)
        header += modelcar.image_volume_note(models_image)
    documents = [*config_map, deployment, kubernetes.service(target.name)]
    if scaling:
        minimum, maximum, cpu = scaling
        documents.append(
            kubernetes.autoscaler(target.name, min_replicas=minimum, max_replicas=maximum, cpu_utilization=cpu)
        )
    written.files[K8S_FILE] = header + dump_yaml(*documents)


def _models_image(target: _Target, options: DeployOptions) -> str | None:
    if not options.models_image:
        return None
    if target.verify is not None:
        raise UsageError(
            "--models-image with --verify-key: the stock image holds no verifier; `repogen push --verify-key` "
            "verifies the signatures before the image is made, and its digest pins those files"
        )
    return modelcar.pinned_reference(options.models_image, "--models-image")


def _kserve(
    target: _Target,
    options: DeployOptions,
    resources: kubernetes.Resources,
    scaling: tuple[int, int, int] | None,
    written: _Written,
) -> None:
    """inferenceservice.yaml: the repository from storage on KServe's stock Triton runtime, or an image of it."""
    if options.image and options.storage_uri:
        raise UsageError(
            "--image and --storage-uri both given for --kserve; expected one: --storage-uri serves the "
            "repository on KServe's stock Triton runtime, --image serves an image with it baked in."
        )
    info, apis = target.info, target.apis
    storage = None if options.image else (options.storage_uri or f"pvc://{target.name}-models")
    if storage:
        written.warnings.extend(_check_stock_runtime(info, target.release))
    isvc = kserve.inference_service(
        target.name, target.release, resources, storage_uri=storage, image=options.image, scaling=scaling,
        liveness=probe.liveness_probe(info, kserve.KSERVE_HTTP_PORT, apis),
        server_extra=[*access_secret.kubernetes_args(target.release, apis), *target.server],
        env=access_secret.kubernetes_env(target.secret) if apis else None, verify=target.verify,
        verifier_image=options.verifier_image or target.image,
    )  # fmt: skip
    config_map, header = _cluster_head(target, resources, "--kserve")
    if modelcar.is_oci(storage):
        upload = modelcar.push_note(info.path.name, modelcar.pinned_reference(str(storage), "--storage-uri"))
    else:
        upload = kserve.upload_note(info, storage, target.name) if storage else ""
    written.files[KSERVE_FILE] = header + upload + dump_yaml(*config_map, isvc)
