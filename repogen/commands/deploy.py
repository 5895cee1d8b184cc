"""``repogen deploy``: Dockerfile, Kubernetes and KServe files for a built repository."""

from __future__ import annotations

from pathlib import Path

import click

from ..deploy import DeployOptions, generate
from ..packages.indexes import PackageIndexes
from ..triton.releases import IMAGE_REPOSITORY, NEWEST
from .params import RELEASE_HELP, release_option, restrict_option, trace_options


@click.command()
@click.argument("repository", type=click.Path(file_okay=False, path_type=Path))
@click.option("--docker", is_flag=True, help="A Dockerfile FROM the stock NGC tritonserver image.")
@click.option("--k8s", is_flag=True, help="A Kubernetes Deployment + Service.")
@click.option("--kserve", is_flag=True, help="A KServe InferenceService on the Triton runtime.")
@click.option(
    "--compose",
    is_flag=True,
    help="A compose.yaml for `docker compose up -d`: the stock image with REPOSITORY mounted read-only, or with "
    "--prebuilt the image of the Dockerfile written beside it.",
)
@click.option(
    "-o", "--output", type=click.Path(file_okay=False, path_type=Path), help="Directory to write (default: stdout)."
)
@release_option(
    default=NEWEST.ngc,
    show_default=True,
    help=f"The release of {IMAGE_REPOSITORY}:<release>-py3 to serve on: {RELEASE_HELP}. The default is the newest "
    "release repogen knows: a default build ships for every container Python, so it loads there; the repository "
    "is checked against the release named and refused if it cannot load there.",
)
@click.option(
    "--prebuilt",
    is_flag=True,
    help="Docker: copy REPOSITORY into the image as built (the default). Compose: run that image (the Dockerfile "
    "is written too) instead of mounting REPOSITORY.",
)
@click.option(
    "--app",
    help="Docker: rebuild the repository inside the image from the APP:ATTR `repogen build` takes (a path under "
    "--context), with the image's Python, instead of copying REPOSITORY; needs -o under --context.",
)
@click.option(
    "--context",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Docker build context: the project directory that `docker build` gets.",
)
@click.option("--name", help="Kubernetes object name (default: REPOSITORY's directory name).")
@click.option(
    "--image", help="Image to run (default <name>:latest). KServe: serve this image instead of --storage-uri."
)
@click.option("--replicas", type=click.IntRange(min=1), default=1, show_default=True,
              help="Replicas; with --max-replicas, the fewest the autoscaler keeps.")  # fmt: skip
@click.option("--max-replicas", type=click.IntRange(min=1), help="Scale on CPU up to this many replicas: a "
              "HorizontalPodAutoscaler (--k8s), minReplicas/maxReplicas (--kserve).")  # fmt: skip
@click.option("--target-cpu-utilization", type=click.IntRange(1, 100), default=80, show_default=True, metavar="PCT",
              help="With --max-replicas: the CPU use (% of --cpu-request) the autoscaler aims at.")  # fmt: skip
@click.option("--cpu-request", default="1", show_default=True)
@click.option("--cpu-limit", default="2", show_default=True)
@click.option("--memory-request", help="Default 2Gi.")
@click.option("--memory-limit", help="Default 4Gi, or more to hold /dev/shm.")
@click.option("--shm-size", help="/dev/shm size (default: 16 MiB per Python model instance, +25%, at least 64Mi).")
@click.option("--gpus", type=int, help="nvidia.com/gpu limit (default 1 if a model uses KIND_GPU, else 0).")
@click.option("--storage-uri", help="KServe: where REPOSITORY was uploaded (s3://..., gs://..., pvc://...), or "
              "oci://REGISTRY/NAME:TAG@sha256:... as `repogen push` printed it (KServe's modelcar).")  # fmt: skip
@click.option("--models-image", metavar="REF@sha256:...", help="Kubernetes >= 1.33: mount this model image (as "
              "`repogen push` printed it) read-only on /models as an image volume; run the stock image.")  # fmt: skip
@click.option("--index-url", help="Docker: the package index the image's pip installs from instead of PyPI (a "
              "mirror); repogen then adds no index of its own.")  # fmt: skip
@click.option("--extra-index-url", "extra_index_urls", multiple=True, help="Docker: another index beside it.")
@click.option("--find-links", "find_links", multiple=True, help="Docker: a URL or a directory of wheels (under "
              "--context: copied into the image) the image's pip also looks in.")  # fmt: skip
@click.option(
    "--verify-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Verify the signed REPOSITORY against this public key before tritonserver starts (upstream's "
    "`model_signing verify`): Docker in a build stage, Kubernetes/KServe in an init container (or, for a --storage-uri "
    "download, in the model container first), the key in a ConfigMap.",
)
@click.option("--verify-key-secret", metavar="SECRET", help="Kubernetes/KServe: the public key from this existing "
              "Secret (as key.pub) instead of a ConfigMap of --verify-key.")  # fmt: skip
@click.option("--verifier-image", help="KServe with --storage-uri and a verify key: an image holding the verifier "
              "(one `repogen deploy --docker --verify-key` builds; default: --image, else <name>:latest).")  # fmt: skip
@trace_options
@restrict_option
@click.option("--access-secret", metavar="NAME", help="Kubernetes/KServe: the Secret holding the access key under "
              "'token' (default <name>-access-token). Docker: `docker run -e REPOGEN_ACCESS_TOKEN`.")  # fmt: skip
def deploy(
    repository: Path,
    output: Path | None,
    index_url: str | None,
    extra_index_urls: tuple[str, ...],
    find_links: tuple[str, ...],
    **options: object,
) -> None:
    """Write deployment files for a built REPOSITORY: --docker, --k8s, --kserve and/or --compose.

    One machine: `repogen serve DIR`, or --compose for `docker compose up -d`. A container: --docker,
    then `docker build`. A cluster: --k8s (Deployment + Service) or --kserve (InferenceService). The
    image installs what the repository does not ship from PyPI, and a PyTorch build (torch==2.13.0+cpu)
    from PyTorch's index, unless --index-url/--extra-index-url/--find-links name the sources.
    """
    indexes = PackageIndexes(index_url, extra_index_urls, find_links)
    result = generate(repository, DeployOptions(output_dir=output, indexes=indexes, **options))  # type: ignore[arg-type]
    for warning in result.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if output is None:  # stdout: the files themselves
        click.echo(result.printed(), nl=False)
    else:
        for line in result.write(output):
            click.echo(line)


COMMANDS = [deploy]
