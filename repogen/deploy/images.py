"""``repogen image`` and ``repogen push``'s library side: a repository checked, then made into an OCI image.

A repository is checked before a byte of its image is written (or pushed): it must pass ``repogen validate``
(configs, the manifest's hash of every file: a tampered file is named), and a signed one must verify against
the key given (``repogen verify``'s check); a signed repository with no key is refused too, since an image made
from it would carry signatures no one checked, and a key for an unsigned repository is refused as
``repogen verify`` refuses it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import DeployError
from ..ondisk.reader import require_directory
from ..ondisk.validate import validate_repository
from .oci_image import OciImage, image_layout, write_layout_archive
from .oci_shell import find_shell

__all__ = ["ImageOptions", "check_repository", "image_archive", "image_in_layout", "size_line"]


@dataclass(frozen=True)
class ImageOptions:
    shell: Path | None = None
    """A static BusyBox (default: the one found on this machine)."""
    title: str | None = None
    """``org.opencontainers.image.title`` (default: the models' names: a directory's name would make two copies of
    one repository two images)."""
    version: str | None = None
    """``org.opencontainers.image.version`` (default: none)."""
    verify_key: Path | None = None
    """A signed repository's public key: its signatures must verify before anything is written."""


def check_repository(repository: Path, verify_key: Path | None) -> str:
    """Refuse a repository that ``repogen validate`` or ``repogen verify`` fails; one phrase on its signatures."""
    errors = [p for p in validate_repository(repository) if not p.warning]
    if errors:
        lines = "\n".join(f"  {problem}" for problem in errors)
        raise DeployError(
            f"{repository} fails `repogen validate` ({len(errors)} problem(s)); no image was written or pushed:\n"
            f"{lines}\nFix: rebuild it with `repogen build` (a file changed after the build is named above)."
        )
    from ..signing import VerifyWith, is_signed, verify_repository  # the signing extra only where signed

    if verify_key is None:
        if is_signed(repository):
            raise DeployError(
                f"{repository} is signed, and an image of it would carry signatures no one checked; no image was "
                "written or pushed. Pass --verify-key PUB.pem (the signer's public key), as `repogen verify` takes it."
            )
        return "not signed"
    result = verify_repository(repository, VerifyWith(verify_key))
    result.raise_if_failed()
    return f"signatures verified against {verify_key}"


def image_in_layout(
    repository: str | Path, layout: Path, options: ImageOptions, signatures: str | None = None
) -> tuple[OciImage, str]:
    """The repository's image in the empty directory ``layout``, and the phrase on its signatures (``signatures``:
    the phrase of a repository :func:`check_repository` has just passed, not checked again)."""
    root = require_directory(repository)
    shell = find_shell(options.shell)  # before the repository is hashed: a missing shell is found at once
    if signatures is None:
        signatures = check_repository(root, options.verify_key)
    return image_layout(root, layout, shell, options.title, options.version), signatures


@contextmanager
def temporary_image(repository: str | Path, options: ImageOptions, signatures: str | None = None) -> Iterator[OciImage]:
    """The image in a layout directory that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="repogen-image-") as work:
        image, _ = image_in_layout(repository, Path(work) / "layout", options, signatures)
        yield image


def image_archive(repository: str | Path, output: Path, options: ImageOptions) -> tuple[OciImage, str]:
    """``repogen image``: the repository's image as an OCI layout tarball at ``output``, written whole or not at all."""
    if output.is_dir():
        raise DeployError(f"-o {output} is a directory; expected the tarball's path, e.g. -o repo.oci.tar")
    if not output.parent.is_dir():
        raise DeployError(f"-o {output}: its directory {output.parent} does not exist")
    with tempfile.TemporaryDirectory(prefix=".repogen-image-", dir=output.parent) as work:
        image, signatures = image_in_layout(repository, Path(work) / "layout", options)
        write_layout_archive(image, output)
    return image, signatures


def size_line(image: OciImage, repository: Path) -> str:
    """The image's size beside the repository's and the shell's (each hard link counted, as the image stores it)."""
    files = sum(p.stat().st_size for p in Path(repository).rglob("*") if p.is_file() and not p.is_symlink())
    shell, models = image.layer_tar_sizes
    return (
        f"{image.size / 1e6:.2f} MB compressed ({shell / 1e6:.2f} MB shell + {models / 1e6:.2f} MB /models as tars; "
        f"the repository's files: {files / 1e6:.2f} MB)"
    )
