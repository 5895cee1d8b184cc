"""``repogen image``: a built repository as an OCI image tarball (KServe modelcar, Kubernetes image volume)."""

from __future__ import annotations

from pathlib import Path

import click

from ..deploy.images import ImageOptions, image_archive, size_line

SHELL_HELP = (
    "A statically linked BusyBox to store as the image's /bin/sh (KServe's modelcar runs `sh -c 'ln ... && sleep "
    "infinity'`). Default: busybox on PATH, /bin/busybox or /usr/bin/busybox, if static (Debian's and Ubuntu's "
    "busybox-static package)."
)


def image_options(function):  # type: ignore[no-untyped-def]
    """The options `repogen image` and `repogen push` share."""
    for option in reversed([
        click.option("--shell", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=SHELL_HELP),
        click.option("--title", help="org.opencontainers.image.title (default: the models' names)."),
        click.option("--image-version", "version", help="org.opencontainers.image.version (default: none)."),
        click.option("--verify-key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="The signer's public key: a signed REPOSITORY must verify before anything is written."),
    ]):  # fmt: skip
        function = option(function)
    return function


@click.command()
@click.argument("repository", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="The OCI image layout tarball to write (repo.oci.tar; oci-archive: to skopeo).")  # fmt: skip
@image_options
def image(repository: Path, output: Path, **options: object) -> None:
    """Write REPOSITORY as an OCI image: /models is the repository, /bin/sh a static BusyBox.

    The same repository gives the same image digest on any machine, from any Python, under any umask.
    It serves as KServe's modelcar (storageUri: oci://...) and as a Kubernetes image volume;
    `repogen push` sends it to a registry.
    """
    made, signatures = image_archive(repository, output, ImageOptions(**options))  # type: ignore[arg-type]
    click.echo(f"Wrote {output}: {made.digest} ({signatures}); {size_line(made, repository)}")


COMMANDS = [image]
