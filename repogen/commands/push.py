"""``repogen push``: a built repository as an OCI image in a registry (KServe's storageUri: oci://...)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..deploy.images import ImageOptions
from ..deploy.registry import PushOptions, push_repository
from .image import image_options


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("target", metavar="REGISTRY/NAME:TAG")
@click.option("--insecure", is_flag=True, help="Plain HTTP: only for a registry without TLS that you trust "
              "(localhost:5000).")  # fmt: skip
@click.option("--docker-config", type=click.Path(file_okay=False, path_type=Path), help="The directory holding "
              "Docker's config.json with the credentials (default: $DOCKER_CONFIG, else ~/.docker).")  # fmt: skip
@click.option("--username", help="Log in as this user instead of config.json's credentials (with --password-stdin).")
@click.option("--password-stdin", is_flag=True, help="With --username: read the password or token from stdin.")
@image_options
def push(
    repository: Path,
    target: str,
    insecure: bool,
    docker_config: Path | None,
    username: str | None,
    password_stdin: bool,
    **image: object,
) -> None:
    """Push REPOSITORY as an OCI image (what `repogen image` writes) to REGISTRY/NAME:TAG.

    The blobs go first, the manifest last; the pushed reference is printed with its digest
    (REGISTRY/NAME:TAG@sha256:...), which `repogen deploy --storage-uri oci://...` and `--models-image` pin.
    """
    if password_stdin and not username:
        raise click.UsageError("--password-stdin needs --username")
    password = sys.stdin.read().rstrip("\n") if password_stdin else None
    options = PushOptions(ImageOptions(**image), insecure, docker_config, username, password)  # type: ignore[arg-type]
    pushed = push_repository(repository, target, options)
    click.echo(f"Pushed {pushed.reference} ({pushed.uploaded} of {len(pushed.image.blobs()) - 1} blobs uploaded, the "
               "manifest last)", err=True)  # fmt: skip
    click.echo(pushed.line())


COMMANDS = [push]
