"""A built repository as an OCI image: ``/models`` is the repository, ``/bin/sh`` a static BusyBox (KServe's modelcar).

The image is a function of the repository's bytes and the shell's alone, so one repository gives one digest on
any machine, from any Python, under any umask: entries sorted, every time 0, owner 0:0 with no names, modes 0755
for directories and executables and 0644 for the rest, hard links stored as the files they are, symlinks refused,
every path relative; JSON with sorted keys and no spaces; gzip with no name and time 0 (deflate's bytes are
zlib's, the same wherever zlib is). Two layers: the shell (shared by every model image on a node) and
``/models``. Nothing states a date: the annotations say what the image holds and which repository it was made
from (``dev.repogen.repository.digest``: the sha256 of the ``/models`` layer's tar, which ``repogen image``
recomputes from the directory).

KServe reads no label of a modelcar image (its webhook looks at the ``oci://`` URI alone); the image carries
``org.containers.type=ai.image.model.car``, the type Podman's and RamaLama's model images use, for registries and
tools that sort images by it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import DeployError
from ..version import __version__
from .oci_shell import Shell

__all__ = [
    "MEDIA_CONFIG",
    "MEDIA_LAYER",
    "MEDIA_MANIFEST",
    "MODELCAR_COMMAND",
    "MODELS_DIR",
    "Descriptor",
    "OciImage",
    "canonical_json",
    "image_layout",
]

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
MODELS_DIR = "models"
"""Where KServe's modelcar command and an image volume's users find the repository."""
MODELCAR_COMMAND = ("sh", "-c", "ln -sf /proc/$$/root/models /mnt/models && sleep infinity")
"""KServe's modelcar container's args; the image's default command too, so ``docker run IMAGE`` is a modelcar."""
CAR_TYPE = ("org.containers.type", "ai.image.model.car")
_GZIP_LEVEL = 6
_CHUNK = 1 << 20


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    annotations: dict[str, str] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.annotations:
            found["annotations"] = dict(self.annotations)
        return found


@dataclass(frozen=True)
class OciImage:
    """An image in an OCI image layout directory (``blobs/sha256/<hex>``, ``index.json``, ``oci-layout``)."""

    layout: Path
    manifest: Descriptor
    config: Descriptor
    layers: tuple[Descriptor, ...]
    layer_tar_sizes: tuple[int, ...]
    """Bytes of each layer's tar before gzip: the shell's, then the repository's."""
    annotations: dict[str, str]

    @property
    def digest(self) -> str:
        return self.manifest.digest

    @property
    def size(self) -> int:
        """What a registry stores and a node pulls: manifest, config and layers."""
        return self.manifest.size + self.config.size + sum(layer.size for layer in self.layers)

    def blob(self, digest: str) -> Path:
        return self.layout / "blobs" / "sha256" / digest.removeprefix("sha256:")

    def blobs(self) -> list[Descriptor]:
        """Everything a registry needs, the manifest last: no tag points at a blob not yet there."""
        return [*self.layers, self.config, self.manifest]


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``target``."""

    def __init__(self, target: IO[bytes]):
        self.target, self.sha256, self.size = target, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.sha256.update(view)
        self.size += len(view)
        self.target.write(view)
        return len(view)


@dataclass(frozen=True)
class _Entry:
    name: str
    source: Path | None  # None: a directory
    mode: int


def _tree(root: Path, prefix: str) -> Iterator[_Entry]:
    """Every directory and file under ``root`` as ``prefix/...``, parents first, siblings sorted by name."""
    yield _Entry(prefix, None, 0o755)
    for item in sorted(os.listdir(root)):
        path = root / item
        info = os.lstat(path)
        name = f"{prefix}/{item}"
        if stat.S_ISLNK(info.st_mode):
            raise DeployError(
                f"{path} is a symbolic link; an image stores plain files only (a link could point out of /models). "
                "Replace it with the file it points to, or rebuild the repository with `repogen build`."
            )
        if stat.S_ISDIR(info.st_mode):
            yield from _tree(path, name)
        elif stat.S_ISREG(info.st_mode):
            yield _Entry(name, path, 0o755 if info.st_mode & 0o111 else 0o644)
        else:
            raise DeployError(f"{path} is not a regular file or directory; a model repository holds files only")


def _tar_info(name: str, size: int, mode: int, directory: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.size, info.mode, info.mtime = (0 if directory else size), mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _write_layer(layout: Path, entries: Iterator[tuple[_Entry, bytes | None]]) -> tuple[Descriptor, str, int]:
    """A gzip'd tar of ``entries`` into the layout's blobs: (its descriptor, the tar's digest, the tar's size)."""
    partial = layout / "blobs" / "sha256" / ".layer.partial"
    with open(partial, "wb") as raw:
        compressed = _Hashing(raw)
        with gzip.GzipFile(filename="", mode="wb", fileobj=compressed, compresslevel=_GZIP_LEVEL, mtime=0) as zipped:
            plain = _Hashing(zipped)  # type: ignore[arg-type]
            with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                for entry, data in entries:
                    _add(tar, entry, data)
    digest = f"sha256:{compressed.sha256.hexdigest()}"
    os.replace(partial, layout / "blobs" / "sha256" / digest.removeprefix("sha256:"))
    return Descriptor(MEDIA_LAYER, digest, compressed.size), f"sha256:{plain.sha256.hexdigest()}", plain.size


def _add(tar: tarfile.TarFile, entry: _Entry, data: bytes | None) -> None:
    if entry.source is None and data is None:
        tar.addfile(_tar_info(entry.name, 0, entry.mode, directory=True))
        return
    if data is not None:
        tar.addfile(_tar_info(entry.name, len(data), entry.mode, directory=False), io.BytesIO(data))
        return
    assert entry.source is not None
    with open(entry.source, "rb") as source:
        size = os.fstat(source.fileno()).st_size
        tar.addfile(_tar_info(entry.name, size, entry.mode, directory=False), source)


def _shell_entries(shell: Shell) -> Iterator[tuple[_Entry, bytes | None]]:
    yield _Entry("bin", None, 0o755), None
    yield _Entry("bin/sh", None, 0o755), shell.data


def _write_blob(layout: Path, media_type: str, data: bytes) -> Descriptor:
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    (layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).write_bytes(data)
    return Descriptor(media_type, digest, len(data))


def _annotations(title: str, version: str | None, repository_digest: str, models: list[str]) -> dict[str, str]:
    found = {
        "org.opencontainers.image.title": title,
        "org.opencontainers.image.description": f"Triton model repository at /{MODELS_DIR} ({', '.join(models)}); "
        "/bin/sh is BusyBox, for KServe's modelcar",
        "dev.repogen.version": __version__,
        "dev.repogen.repository.digest": repository_digest,
        CAR_TYPE[0]: CAR_TYPE[1],
    }
    if version:
        found["org.opencontainers.image.version"] = version
    return found


def _config(shell: Shell, diff_ids: list[str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "architecture": shell.architecture,
        "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": list(MODELCAR_COMMAND), "WorkingDir": "/", "Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }


def image_layout(
    repository: Path, layout: Path, shell: Shell, title: str | None = None, version: str | None = None
) -> OciImage:
    """Write the image of ``repository`` (already checked) into the empty OCI layout directory ``layout``."""
    (layout / "blobs" / "sha256").mkdir(parents=True)
    shell_layer, shell_tar, shell_size = _write_layer(layout, _shell_entries(shell))
    models = ((entry, None) for entry in _tree(repository, MODELS_DIR))
    models_layer, models_tar, models_size = _write_layer(layout, models)
    names = sorted(p.name for p in repository.iterdir() if (p / "config.pbtxt").is_file())
    annotations = _annotations(title or ", ".join(names), version, models_tar, names)
    config = _write_blob(layout, MEDIA_CONFIG, canonical_json(_config(shell, [shell_tar, models_tar], annotations)))
    manifest_json = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": config.json(),
        "layers": [shell_layer.json(), models_layer.json()],
        "annotations": annotations,
    }
    manifest = _write_blob(layout, MEDIA_MANIFEST, canonical_json(manifest_json))
    (layout / "oci-layout").write_bytes(canonical_json({"imageLayoutVersion": "1.0.0"}))
    index = {"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": [manifest.json()]}
    (layout / "index.json").write_bytes(canonical_json(index))
    return OciImage(layout, manifest, config, (shell_layer, models_layer), (shell_size, models_size), annotations)


def write_layout_archive(image: OciImage, output: Path) -> None:
    """The layout directory as one tar (``oci-archive:`` to skopeo and podman), written beside ``output`` first."""
    partial = output.with_name(f".{output.name}.partial")
    entries = [_Entry("blobs", None, 0o755), _Entry("blobs/sha256", None, 0o755)]
    entries += [_Entry(f"blobs/sha256/{d.digest.removeprefix('sha256:')}", image.blob(d.digest), 0o644)
                for d in sorted(image.blobs(), key=lambda d: d.digest)]  # fmt: skip
    entries += [_Entry("index.json", image.layout / "index.json", 0o644),
                _Entry("oci-layout", image.layout / "oci-layout", 0o644)]  # fmt: skip
    try:
        with open(partial, "wb") as raw, tarfile.open(fileobj=raw, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for entry in entries:
                _add(tar, entry, None)
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
